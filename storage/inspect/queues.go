package inspect

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/wheelmq/wheelmq/storage/commitlog"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
	"github.com/wheelmq/wheelmq/storage/message"
)

// queueStats accumulates the consume-queue summary.
type queueStats struct {
	sum   Summary
	holes int64
	n     int
}

// verifyQueues checks every consume queue under dir: file layout, unit
// sanity, and (unless opts.SkipUnits) that each unit leads to the record of
// its queue and queue offset in the CommitLog.
func verifyQueues(r *Report, dir string, cl *clReader, opts Options) error {
	st := &queueStats{sum: Summary{Part: "consumequeue"}}
	topics, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		r.Parts = append(r.Parts, st.sum)
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", dir, err)
	}
	for _, t := range topics {
		if !t.IsDir() {
			continue
		}
		qdirs, err := os.ReadDir(filepath.Join(dir, t.Name()))
		if err != nil {
			return fmt.Errorf("read %s: %w", filepath.Join(dir, t.Name()), err)
		}
		for _, qd := range qdirs {
			qid, err := strconv.ParseInt(qd.Name(), 10, 32)
			if !qd.IsDir() || err != nil || qid < 0 {
				continue
			}
			id := consumequeue.QueueID{Topic: t.Name(), QueueID: int32(qid)}
			if err := verifyQueue(r, st, filepath.Join(dir, t.Name(), qd.Name()), id, cl, opts); err != nil {
				return err
			}
		}
	}
	st.sum.Note = fmt.Sprintf("%d queues, %d holes", st.n, st.holes)
	r.Parts = append(r.Parts, st.sum)
	return nil
}

// unitFile is one unit file of a queue.
type unitFile struct {
	base int64
	path string
	size int64
}

// verifyQueue checks one queue directory.
func verifyQueue(r *Report, st *queueStats, dir string, id consumequeue.QueueID, cl *clReader, opts Options) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read %s: %w", dir, err)
	}
	var files []unitFile
	for _, e := range ents {
		base, ok := consumequeue.ParseFileName(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			return fmt.Errorf("stat %s: %w", filepath.Join(dir, e.Name()), err)
		}
		files = append(files, unitFile{base: base, path: filepath.Join(dir, e.Name()), size: fi.Size()})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].base < files[j].base })
	st.n++
	upf := int64(consumequeue.DefaultUnitsPerFile)
	if len(files) >= 2 {
		upf = files[1].base - files[0].base
	}
	q := &queueCheck{r: r, st: st, id: id, cl: cl, opts: opts}
	for i, f := range files {
		last := i == len(files)-1
		st.sum.Files++
		st.sum.Bytes += f.size
		if upf <= 0 || f.base%upf != 0 || (i > 0 && f.base != files[i-1].base+upf) {
			r.add(Finding{Severity: Damage, Path: f.path, Pos: -1,
				Detail: fmt.Sprintf("queue %s: file does not follow the previous one (%d units per file)", id, upf)})
		}
		if !last && f.size != upf*consumequeue.UnitSize {
			r.add(Finding{Severity: Damage, Path: f.path, Pos: -1,
				Detail: fmt.Sprintf("queue %s: file of %d bytes is not full but later files exist", id, f.size)})
		}
		if err := q.file(f, last); err != nil {
			return err
		}
	}
	if max, ok := cl.queues[id]; ok && max >= q.next {
		r.add(Finding{Severity: Warning, Path: dir, Pos: -1,
			Detail: fmt.Sprintf("queue %s ends at offset %d but the commitlog holds its records up to queue offset %d (not dispatched yet)", id, q.next, max)})
	}
	return nil
}

// queueCheck is the state of one queue's check.
type queueCheck struct {
	r       *Report
	st      *queueStats
	id      consumequeue.QueueID
	cl      *clReader
	opts    Options
	prev    consumequeue.Unit
	hasPrev bool
	next    int64 // queue offset after the last unit read
}

// file checks the units of one file.
func (q *queueCheck) file(f unitFile, last bool) error {
	fh, err := os.Open(f.path)
	if err != nil {
		return fmt.Errorf("open %s: %w", f.path, err)
	}
	defer fh.Close()
	data, err := io.ReadAll(bufio.NewReaderSize(fh, 1<<20))
	if err != nil {
		return fmt.Errorf("read %s: %w", f.path, err)
	}
	n := int64(len(data)) / consumequeue.UnitSize
	for k := int64(0); k < n; k++ {
		pos := k * consumequeue.UnitSize
		u := consumequeue.DecodeUnit(data[pos:])
		idx := f.base + k
		q.next = idx + 1
		q.st.sum.Items++
		if reason := consumequeue.CheckUnit(u, q.prev, q.hasPrev); reason != "" {
			sev, what := Damage, reason
			if last && allZero(data[pos:]) {
				sev, what = Warning, "zero-filled tail; recovery cuts it"
			}
			q.r.add(Finding{Severity: sev, Path: f.path, Pos: pos, Size: consumequeue.UnitSize,
				Detail: fmt.Sprintf("queue %s unit %d: %s", q.id, idx, what)})
			if sev == Warning {
				break
			}
			continue
		}
		q.prev, q.hasPrev = u, true
		if u.IsHole() {
			q.st.holes++
			continue
		}
		if !q.opts.SkipUnits {
			q.unit(f, pos, idx, u)
		}
	}
	if rest := int64(len(data)) % consumequeue.UnitSize; rest != 0 {
		sev := Damage
		if last {
			sev = Warning
		}
		q.r.add(Finding{Severity: sev, Path: f.path, Pos: n * consumequeue.UnitSize, Size: rest,
			Detail: fmt.Sprintf("queue %s: partial unit at the end of the file", q.id)})
	}
	return nil
}

// unit checks that unit idx leads to the record of its queue and offset.
func (q *queueCheck) unit(f unitFile, pos, idx int64, u consumequeue.Unit) {
	bad := func(sev Severity, format string, args ...any) {
		q.r.add(Finding{Severity: sev, Path: f.path, Pos: pos, Size: consumequeue.UnitSize,
			Detail: fmt.Sprintf("queue %s unit %d (commitlog offset %d, size %d): ", q.id, idx, u.Offset, u.Size) +
				fmt.Sprintf(format, args...)})
	}
	switch {
	case u.Offset >= q.cl.tornAt:
		bad(Warning, "points past the commitlog end %d (torn tail included); recovery drops it", q.cl.tornAt)
		return
	case u.Offset < q.cl.start():
		bad(Warning, "points below the commitlog start %d", q.cl.start())
		return
	}
	e, _, err := q.cl.entryAt(u.Offset)
	switch {
	case err != nil:
		bad(Damage, "cannot be read: %v", err)
		return
	case e.Kind != commitlog.EntryRecord && e.Kind != commitlog.EntryBlank && q.headerMatches(u):
		bad(Damage, "its message is damaged: %s", e.Reason)
		return
	case e.Kind != commitlog.EntryRecord:
		bad(Damage, "does not lead to a record (%s)", orBlank(e))
		return
	case e.Size != int64(u.Size)+commitlog.EntryOverhead:
		bad(Damage, "the record there is %d bytes", e.Size-commitlog.EntryOverhead)
		return
	}
	m, _, err := message.Decode(e.Record)
	switch {
	case err != nil:
		return // reported with the CommitLog
	case m.Topic != q.id.Topic || m.QueueID != q.id.QueueID:
		bad(Damage, "leads to a message of queue %s/%d", m.Topic, m.QueueID)
	case m.QueueOffset != idx:
		bad(Damage, "leads to the message of queue offset %d", m.QueueOffset)
	}
}

// headerMatches reports whether the CommitLog header at the unit's offset
// says a record of the unit's size starts there.
func (q *queueCheck) headerMatches(u consumequeue.Unit) bool {
	s, ok := q.cl.segment(u.Offset)
	if !ok {
		return false
	}
	var hdr [8]byte
	if _, err := s.f.ReadAt(hdr[:], u.Offset-s.base); err != nil {
		return false
	}
	size := int32(uint32(hdr[0])<<24 | uint32(hdr[1])<<16 | uint32(hdr[2])<<8 | uint32(hdr[3]))
	magic := uint32(hdr[4])<<24 | uint32(hdr[5])<<16 | uint32(hdr[6])<<8 | uint32(hdr[7])
	return size == u.Size && (magic == message.MagicV1 || magic == message.MagicV2)
}

func orBlank(e commitlog.Entry) string {
	if e.Kind == commitlog.EntryBlank {
		return "a blank marker is there"
	}
	return e.Reason
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}
