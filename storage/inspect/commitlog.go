package inspect

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/wheelmq/wheelmq/storage/commitlog"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
	"github.com/wheelmq/wheelmq/storage/message"
)

// clSegment is one CommitLog segment file opened read-only.
type clSegment struct {
	base, size int64
	path       string
	f          *os.File
}

// clReader reads a CommitLog directory read-only.
type clReader struct {
	dir     string
	segSize int64
	segs    []clSegment // ascending base
	// queues holds, per queue, the highest QUEUEOFFSET of a verified
	// record, to find units missing at a queue's end.
	queues map[consumequeue.QueueID]int64
	// tornAt is where the last segment's torn tail starts (end() when it
	// has none): recovery cuts from there.
	tornAt int64
}

// openCommitLog lists and opens the segment files of dir. A missing
// directory is an empty log.
func openCommitLog(dir string, segSize int64) (*clReader, error) {
	c := &clReader{dir: dir, segSize: segSize, queues: map[consumequeue.QueueID]int64{}}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	for _, e := range ents {
		base, ok := commitlog.ParseSegmentName(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		f, err := os.Open(path)
		if err != nil {
			c.close()
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
		fi, err := f.Stat()
		if err != nil {
			_ = f.Close()
			c.close()
			return nil, fmt.Errorf("stat %s: %w", path, err)
		}
		c.segs = append(c.segs, clSegment{base: base, size: fi.Size(), path: path, f: f})
	}
	sort.Slice(c.segs, func(i, j int) bool { return c.segs[i].base < c.segs[j].base })
	if c.segSize <= 0 {
		c.segSize = commitlog.DefaultSegmentSize
		if len(c.segs) >= 2 {
			c.segSize = c.segs[1].base - c.segs[0].base
		}
	}
	return c, nil
}

func (c *clReader) close() {
	for _, s := range c.segs {
		_ = s.f.Close()
	}
}

// end is the offset after the last byte of the last segment.
func (c *clReader) end() int64 {
	if len(c.segs) == 0 {
		return 0
	}
	s := c.segs[len(c.segs)-1]
	return s.base + s.size
}

// start is the first segment's base.
func (c *clReader) start() int64 {
	if len(c.segs) == 0 {
		return 0
	}
	return c.segs[0].base
}

// segment returns the segment holding global offset off.
func (c *clReader) segment(off int64) (*clSegment, bool) {
	i := sort.Search(len(c.segs), func(i int) bool { return c.segs[i].base > off }) - 1
	if i < 0 || off >= c.segs[i].base+c.segs[i].size {
		return nil, false
	}
	return &c.segs[i], true
}

// entryAt classifies the bytes at global offset off.
func (c *clReader) entryAt(off int64) (commitlog.Entry, *clSegment, error) {
	s, ok := c.segment(off)
	if !ok {
		return commitlog.Entry{}, nil, fmt.Errorf("offset %d: %w", off, commitlog.ErrOutOfRange)
	}
	e, err := commitlog.EntryAt(s.f, s.base, s.size, c.segSize, off)
	return e, s, err
}

// verifyCommitLog checks every segment of the CommitLog in dir, entry by
// entry, and returns the open reader for the other checks.
func verifyCommitLog(r *Report, dir string, opts Options) (*clReader, error) {
	c, err := openCommitLog(dir, opts.SegmentSize)
	if err != nil {
		return nil, err
	}
	sum := Summary{Part: "commitlog", Files: len(c.segs)}
	c.tornAt = c.end()
	var damaged int64
	for i, s := range c.segs {
		last := i == len(c.segs)-1
		if s.base%c.segSize != 0 || (i > 0 && s.base != c.segs[i-1].base+c.segSize) {
			r.add(Finding{Severity: Damage, Path: s.path, Pos: -1,
				Detail: fmt.Sprintf("segment does not follow the previous one (segment size %d): segments are missing", c.segSize)})
		}
		if s.size > c.segSize {
			r.add(Finding{Severity: Damage, Path: s.path, Pos: -1,
				Detail: fmt.Sprintf("file of %d bytes is larger than the segment size %d", s.size, c.segSize)})
		}
		sum.Bytes += s.size
		complete, err := commitlog.ScanSegment(s.f, s.base, s.size, c.segSize, func(e commitlog.Entry) error {
			switch e.Kind {
			case commitlog.EntryRecord:
				sum.Items++
				c.checkRecord(r, s, e)
			case commitlog.EntryDamaged:
				damaged += e.Size
				r.add(Finding{Severity: Damage, Path: s.path, Pos: e.Offset - s.base, Size: e.Size,
					Detail: fmt.Sprintf("commitlog offset %d: %s; the next entry that verifies is at %d", e.Offset, e.Reason, e.Offset+e.Size)})
			case commitlog.EntryTorn:
				f := Finding{Severity: Damage, Path: s.path, Pos: e.Offset - s.base, Size: e.Size,
					Detail: fmt.Sprintf("commitlog offset %d: %s; nothing after it verifies, and later segments exist", e.Offset, e.Reason)}
				if last {
					f.Severity = Warning
					f.Detail = fmt.Sprintf("commitlog offset %d: torn tail (%s); recovery cuts it", e.Offset, e.Reason)
					c.tornAt = e.Offset
				}
				r.add(f)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", s.path, err)
		}
		if !complete && !last {
			r.add(Finding{Severity: Damage, Path: s.path, Pos: s.size,
				Detail: "segment ends early (no blank marker) but later segments exist: records are missing"})
		}
	}
	sum.Note = fmt.Sprintf("offsets %d..%d, segment size %d", c.start(), c.end(), c.segSize)
	if damaged > 0 {
		sum.Note += fmt.Sprintf(", %d damaged bytes", damaged)
	}
	r.Parts = append(r.Parts, sum)
	return c, nil
}

// checkRecord decodes a verified record: its message layout and body CRC.
func (c *clReader) checkRecord(r *Report, s clSegment, e commitlog.Entry) {
	m, _, err := message.Decode(e.Record)
	if err == nil {
		err = message.VerifyBodyCRC(e.Record)
	}
	if err != nil {
		r.add(Finding{Severity: Damage, Path: s.path, Pos: e.Offset - s.base, Size: e.Size,
			Detail: fmt.Sprintf("commitlog offset %d: entry checksum is right but the message does not decode: %v", e.Offset, err)})
		return
	}
	id := consumequeue.QueueID{Topic: m.Topic, QueueID: m.QueueID}
	if cur, ok := c.queues[id]; !ok || m.QueueOffset > cur {
		c.queues[id] = m.QueueOffset
	}
}
