// Package inspect reads a wheelmq data directory without changing it and
// reports what it finds, like bbolt's "bbolt check" and "bbolt page": Verify
// checks every record of every file (CommitLog segments, consume queues,
// the TimerLog, the checkpoints and metadata files) and Dump prints the
// CommitLog records at an offset in human-readable form.
//
// Nothing here writes, truncates or locks: it is safe on a copy of a data
// directory, and on the directory of a stopped broker. On the directory of
// a running broker the tails may be mid-write and show up as warnings.
//
// VerifyCommand and DumpCommand are the bodies of "wheelctl store verify"
// and "wheelctl store dump": they print to an io.Writer and return the
// process exit status.
package inspect

import (
	"fmt"
	"io"
	"path/filepath"
	"sort"
)

// Severity ranks a finding.
type Severity uint8

const (
	// Warning is state recovery handles without losing acknowledged data:
	// a torn tail, a unit past the CommitLog end, a stale checkpoint copy.
	Warning Severity = iota + 1
	// Damage is data that fails its checks inside a file: bytes that were
	// written and synced and no longer verify.
	Damage
)

// String names the severity.
func (s Severity) String() string {
	if s == Damage {
		return "DAMAGE"
	}
	return "warning"
}

// Finding is one problem found in a file.
type Finding struct {
	Severity Severity
	// Path is the file (or directory) holding the problem.
	Path string
	// Pos is the byte position in the file (-1: the whole file).
	Pos int64
	// Size is the number of bytes concerned (0: unknown or not bytes).
	Size int64
	// Detail says what is wrong, with the logical position (CommitLog
	// offset, queue offset, TimerLog sequence) where there is one.
	Detail string
}

// String formats the finding as one line.
func (f Finding) String() string {
	where := f.Path
	if f.Pos >= 0 {
		where = fmt.Sprintf("%s at byte %d", f.Path, f.Pos)
	}
	if f.Size > 0 {
		where += fmt.Sprintf(" (%d bytes)", f.Size)
	}
	return fmt.Sprintf("%-7s %s: %s", f.Severity, where, f.Detail)
}

// Summary counts what one part of the store holds.
type Summary struct {
	// Part is "commitlog", "consumequeue", "timerlog", "timer checkpoint",
	// "checkpoint" or a metadata file name.
	Part string
	// Files is the number of files read.
	Files int
	// Items is the number of records, units or entries verified.
	Items int64
	// Bytes is the number of bytes read.
	Bytes int64
	// Note adds part-specific counts ("3 holes", ...).
	Note string
}

// Report is the outcome of Verify.
type Report struct {
	Dir      string
	Parts    []Summary
	Findings []Finding
}

// Damaged reports whether any finding is Damage.
func (r *Report) Damaged() bool {
	for _, f := range r.Findings {
		if f.Severity == Damage {
			return true
		}
	}
	return false
}

// count returns the number of findings of severity s.
func (r *Report) count(s Severity) int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == s {
			n++
		}
	}
	return n
}

func (r *Report) add(f Finding) { r.Findings = append(r.Findings, f) }

// Options configures Verify and Dump.
type Options struct {
	// SegmentSize is the CommitLog segment size. 0: inferred from the
	// segment file names (two or more segments), else commitlog's default.
	SegmentSize int64
	// SkipUnits skips checking every consume-queue unit against its
	// CommitLog record (only the units' own sanity is checked).
	SkipUnits bool
}

// Verify reads every file of the data directory dir and returns what it
// found. The error is for a directory that cannot be read at all; damage is
// reported in the Report.
func Verify(dir string, opts Options) (*Report, error) {
	r := &Report{Dir: dir}
	cl, err := verifyCommitLog(r, filepath.Join(dir, "commitlog"), opts)
	if err != nil {
		return nil, err
	}
	defer cl.close()
	if err := verifyQueues(r, filepath.Join(dir, "consumequeue"), cl, opts); err != nil {
		return nil, err
	}
	if err := verifyTimer(r, filepath.Join(dir, "timer")); err != nil {
		return nil, err
	}
	verifyConfig(r, filepath.Join(dir, "config"), cl)
	sort.SliceStable(r.Findings, func(i, j int) bool { return r.Findings[i].Severity > r.Findings[j].Severity })
	return r, nil
}

// Exit statuses of the commands.
const (
	ExitClean   = 0 // nothing damaged (warnings allowed)
	ExitDamaged = 1 // damage found
	ExitError   = 2 // the directory could not be read, or bad arguments
)

// VerifyCommand runs Verify on dir and prints the findings and a summary to
// w. It returns ExitClean, ExitDamaged or ExitError.
func VerifyCommand(w io.Writer, dir string, opts Options) int {
	r, err := Verify(dir, opts)
	if err != nil {
		fmt.Fprintf(w, "verify %s: %v\n", dir, err)
		return ExitError
	}
	if err := WriteReport(w, r); err != nil {
		return ExitError
	}
	if r.Damaged() {
		return ExitDamaged
	}
	return ExitClean
}

// WriteReport prints a report: one line per part, the findings, and a
// verdict.
func WriteReport(w io.Writer, r *Report) error {
	var err error
	p := func(format string, args ...any) {
		if err == nil {
			_, err = fmt.Fprintf(w, format, args...)
		}
	}
	p("store %s\n", r.Dir)
	for _, s := range r.Parts {
		p("  %-20s %4d files %12d items %14d bytes", s.Part, s.Files, s.Items, s.Bytes)
		if s.Note != "" {
			p("  %s", s.Note)
		}
		p("\n")
	}
	for _, f := range r.Findings {
		p("%s\n", f)
	}
	damage, warn := r.count(Damage), r.count(Warning)
	verdict := "OK"
	if damage > 0 {
		verdict = "DAMAGED"
	}
	p("%s: %d damaged, %d warnings\n", verdict, damage, warn)
	return err
}
