package inspect

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/storage/meta"
	"github.com/wheelmq/wheelmq/storage/vfs"
	"github.com/wheelmq/wheelmq/timerwheel/checkpoint"
	"github.com/wheelmq/wheelmq/timerwheel/timerlog"
)

// File names of the timer store (timerwheel) and of the broker's config.
const (
	timerLogDir     = "timerlog"
	timerCheckpoint = "checkpoint"
	timerSnapshot   = "wheel.snap"
	copyStride      = 512 // distance between the timer checkpoint's two copies
)

// tlSegment is one TimerLog segment file.
type tlSegment struct {
	first uint64
	path  string
}

// verifyTimer checks the timer store in dir: every TimerLog entry, both
// checkpoint copies and the snapshot.
func verifyTimer(r *Report, dir string) error {
	last, err := verifyTimerLog(r, filepath.Join(dir, timerLogDir))
	if err != nil {
		return err
	}
	verifyTimerCheckpoint(r, filepath.Join(dir, timerCheckpoint), last)
	return nil
}

// verifyTimerLog checks every entry of every TimerLog segment and returns
// the last sequence found (0: none).
func verifyTimerLog(r *Report, dir string) (uint64, error) {
	sum := Summary{Part: "timerlog"}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		r.Parts = append(r.Parts, sum)
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", dir, err)
	}
	var segs []tlSegment
	for _, e := range ents {
		first, err := strconv.ParseUint(e.Name(), 10, 64)
		if e.IsDir() || len(e.Name()) != 20 || err != nil || first == 0 {
			continue // wal's .START/.END/.TEMP files and anything else
		}
		segs = append(segs, tlSegment{first: first, path: filepath.Join(dir, e.Name())})
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].first < segs[j].first })
	var last uint64
	var damaged int64
	for i, s := range segs {
		data, err := os.ReadFile(s.path)
		if err != nil {
			return 0, fmt.Errorf("read %s: %w", s.path, err)
		}
		sum.Files++
		sum.Bytes += int64(len(data))
		if i > 0 && s.first != last+1 {
			r.add(Finding{Severity: Damage, Path: s.path, Pos: -1,
				Detail: fmt.Sprintf("timerlog segment starts at sequence %d, the previous one ends at %d", s.first, last)})
		}
		n := uint64(len(data) / timerlog.EntrySize)
		for k := uint64(0); k < n; k++ {
			seq := s.first + k
			e := data[k*timerlog.EntrySize : (k+1)*timerlog.EntrySize]
			sum.Items++
			if reason := checkTimerEntry(e, seq); reason != "" {
				damaged += timerlog.EntrySize
				r.add(Finding{Severity: Damage, Path: s.path, Pos: int64(k * timerlog.EntrySize), Size: timerlog.EntrySize,
					Detail: fmt.Sprintf("timerlog sequence %d: %s", seq, reason)})
			}
		}
		last = s.first + n - 1
		if rest := len(data) % timerlog.EntrySize; rest != 0 {
			f := Finding{Severity: Damage, Path: s.path, Pos: int64(n * timerlog.EntrySize), Size: int64(rest),
				Detail: "partial timerlog entry, and later segments exist"}
			if i == len(segs)-1 {
				f.Severity, f.Detail = Warning, "torn timerlog tail (partial entry); recovery cuts it"
			}
			r.add(f)
		}
	}
	switch {
	case len(segs) > 0 && last >= segs[0].first:
		sum.Note = fmt.Sprintf("sequences %d..%d", segs[0].first, last)
	case len(segs) > 0:
		sum.Note = "empty"
	}
	if damaged > 0 {
		sum.Note += fmt.Sprintf(", %d damaged bytes", damaged)
	}
	r.Parts = append(r.Parts, sum)
	return last, nil
}

// checkTimerEntry returns why a TimerLog entry is not the valid record of
// sequence seq, or "".
func checkTimerEntry(e []byte, seq uint64) string {
	if e[0] != timerlog.RecordSize {
		return fmt.Sprintf("length prefix %d, want %d", e[0], timerlog.RecordSize)
	}
	rec, err := timerlog.Decode(e[1:])
	if err != nil {
		return err.Error()
	}
	if rec.Seq != seq {
		return fmt.Sprintf("holds sequence %d", rec.Seq)
	}
	return ""
}

// verifyTimerCheckpoint checks both copies of the timer checkpoint and the
// snapshot next to it.
func verifyTimerCheckpoint(r *Report, path string, lastSeq uint64) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	sum := Summary{Part: "timer checkpoint", Files: 1, Bytes: int64(len(data))}
	if err != nil {
		r.add(Finding{Severity: Damage, Path: path, Pos: -1, Detail: fmt.Sprintf("unreadable: %v", err)})
		r.Parts = append(r.Parts, sum)
		return
	}
	var good []checkpoint.Checkpoint
	written := 0
	for i := 0; i < 2; i++ {
		off := i * copyStride
		if off+checkpoint.Size > len(data) {
			continue
		}
		b := data[off : off+checkpoint.Size]
		if allZero(b) {
			continue // never written
		}
		written++
		sum.Items++
		c, err := checkpoint.Decode(b)
		if err != nil {
			r.add(Finding{Severity: Warning, Path: path, Pos: int64(off), Size: checkpoint.Size,
				Detail: fmt.Sprintf("timer checkpoint copy %d: %v (the other copy is used)", i, err)})
			continue
		}
		good = append(good, c)
	}
	if written > 0 && len(good) == 0 {
		r.add(Finding{Severity: Damage, Path: path, Pos: -1, Detail: "no timer checkpoint copy verifies"})
	}
	for _, c := range good {
		if c.FlushedSeq > lastSeq {
			r.add(Finding{Severity: Damage, Path: path, Pos: -1,
				Detail: fmt.Sprintf("checkpoint says timerlog sequence %d was synced, the log ends at %d", c.FlushedSeq, lastSeq)})
			break
		}
	}
	snap := filepath.Join(filepath.Dir(path), timerSnapshot)
	if sn, err := checkpoint.ReadSnapshot(vfs.OS{}, snap); err != nil {
		r.add(Finding{Severity: Warning, Path: snap, Pos: -1, Detail: fmt.Sprintf("%v; recovery replays the whole timerlog", err)})
	} else if sn != nil {
		sum.Files++
		sum.Note = fmt.Sprintf("snapshot at sequence %d", sn.Seq)
		if sn.Seq > lastSeq {
			r.add(Finding{Severity: Warning, Path: snap, Pos: -1,
				Detail: fmt.Sprintf("snapshot covers sequence %d beyond the log end %d; recovery replays the whole timerlog", sn.Seq, lastSeq)})
		}
	}
	r.Parts = append(r.Parts, sum)
}

// verifyConfig checks the broker's metadata files: the stage checkpoint
// and the JSON files (with their .bak fallbacks).
func verifyConfig(r *Report, dir string, cl *clReader) {
	path := filepath.Join(dir, "checkpoint")
	if fi, err := os.Stat(path); err == nil {
		sum := Summary{Part: "checkpoint", Files: 1, Bytes: fi.Size()}
		cp, err := meta.LoadCheckpoint(nil, path)
		if err != nil {
			r.add(Finding{Severity: Damage, Path: path, Pos: -1, Detail: err.Error()})
		} else {
			sum.Items = int64(len(cp.Values))
			for name, v := range cp.Values {
				if (name == "dispatch" || name == "timer_replay_from") && v > cl.end() {
					r.add(Finding{Severity: Warning, Path: path, Pos: -1,
						Detail: fmt.Sprintf("%s = %d lies beyond the commitlog end %d", name, v, cl.end())})
				}
			}
		}
		r.Parts = append(r.Parts, sum)
	}
	for _, f := range []struct {
		name string
		load func(path string, log zerolog.Logger) error
	}{
		{"topics.json", func(p string, log zerolog.Logger) error {
			_, _, err := meta.LoadTopics(nil, p, meta.WithLogger(log))
			return err
		}},
		{"consumerOffset.json", func(p string, log zerolog.Logger) error {
			_, err := meta.LoadOffsets(nil, p, meta.WithLogger(log))
			return err
		}},
	} {
		path := filepath.Join(dir, f.name)
		fi, err := os.Stat(path)
		_, berr := os.Stat(path + meta.BackupSuffix)
		if err != nil && berr != nil {
			continue
		}
		sum := Summary{Part: f.name, Files: 1, Items: 1}
		if err == nil {
			sum.Bytes = fi.Size()
		}
		var buf bytes.Buffer
		if err := f.load(path, zerolog.New(&buf)); err != nil {
			r.add(Finding{Severity: Damage, Path: path, Pos: -1, Detail: err.Error()})
		} else if buf.Len() > 0 {
			r.add(Finding{Severity: Warning, Path: path, Pos: -1,
				Detail: "unreadable or missing; its " + meta.BackupSuffix + " copy is used"})
		}
		r.Parts = append(r.Parts, sum)
	}
}
