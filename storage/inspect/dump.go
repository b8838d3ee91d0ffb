package inspect

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/wheelmq/wheelmq/storage/commitlog"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/metarec"
)

// dumpPreview is how many bytes of a damaged span Dump shows in hex.
const dumpPreview = 64

// maxDumpRead bounds the bytes of a damaged span Dump tries to dissect.
const maxDumpRead = 8 << 20

// Dump writes count CommitLog entries of the data directory dir, from
// global offset offset on, to w: for each record its position, size and
// checksum state, then every field (topic, queue, queue and physical
// offsets, timestamps, hosts, properties, a body preview) as
// message.Dump prints them. A damaged span is shown with the reason, a hex
// preview and the fields as stored (unverified) when they parse, and the
// dump goes on at the next entry that verifies. Read-only.
func Dump(w io.Writer, dir string, offset int64, count int, opts Options) error {
	cl, err := openCommitLog(filepath.Join(dir, "commitlog"), opts.SegmentSize)
	if err != nil {
		return err
	}
	defer cl.close()
	if len(cl.segs) == 0 {
		return fmt.Errorf("%s: no commitlog segments", dir)
	}
	if offset < cl.start() || offset >= cl.end() {
		return fmt.Errorf("offset %d outside the commitlog [%d, %d): %w", offset, cl.start(), cl.end(), commitlog.ErrOutOfRange)
	}
	d := &dumper{w: w, cl: cl}
	off := offset
	for n := 0; n < count && d.err == nil; {
		if off >= cl.end() {
			d.printf("offset %d: end of the commitlog\n", off)
			break
		}
		s, ok := cl.segment(off)
		if !ok {
			// Past a segment file's end (after a blank marker, or a
			// missing segment): go to the next segment that exists.
			next := (off/cl.segSize + 1) * cl.segSize
			for _, sg := range cl.segs {
				if sg.base >= next {
					next = sg.base
					break
				}
			}
			if next <= off {
				break
			}
			off = next
			continue
		}
		e, err := commitlog.EntryAt(s.f, s.base, s.size, cl.segSize, off)
		if err != nil {
			return err
		}
		n++
		off = d.entry(s, e)
	}
	return d.err
}

// DumpCommand runs Dump and returns ExitClean, or ExitError with the error
// printed to w.
func DumpCommand(w io.Writer, dir string, offset int64, count int, opts Options) int {
	if count <= 0 {
		count = 1
	}
	if err := Dump(w, dir, offset, count, opts); err != nil {
		fmt.Fprintf(w, "dump %s: %v\n", dir, err)
		return ExitError
	}
	return ExitClean
}

// dumper prints entries; err keeps the first write error.
type dumper struct {
	w   io.Writer
	cl  *clReader
	err error
}

func (d *dumper) printf(format string, args ...any) {
	if d.err == nil {
		_, d.err = fmt.Fprintf(d.w, format, args...)
	}
}

// entry prints one entry and returns the offset to continue from.
func (d *dumper) entry(s *clSegment, e commitlog.Entry) int64 {
	where := fmt.Sprintf("offset %d (%s byte %d)", e.Offset, filepath.Base(s.path), e.Offset-s.base)
	switch e.Kind {
	case commitlog.EntryRecord:
		bodyCRC := "ok"
		if err := message.VerifyBodyCRC(e.Record); err != nil {
			bodyCRC = "BAD: " + err.Error()
		}
		d.printf("%s: record of %d bytes, next entry at %d\n  crc32c ok, body crc %s\n",
			where, len(e.Record), e.Offset+e.Size, bodyCRC)
		d.fields(e.Record)
		return e.Offset + e.Size
	case commitlog.EntryBlank:
		next := s.base + d.cl.segSize
		d.printf("%s: blank marker, the segment ends; next entry at %d\n\n", where, next)
		return next
	}
	kind := "DAMAGED"
	next := e.Offset + e.Size
	tail := fmt.Sprintf("the next entry that verifies is at %d", next)
	if e.Kind == commitlog.EntryTorn {
		kind, next = "TORN", s.base+d.cl.segSize
		tail = "nothing after it in this segment verifies"
	}
	d.printf("%s: %s, crc32c bad or no entry starts here: %s\n  %d bytes; %s\n", where, kind, e.Reason, e.Size, tail)
	raw := make([]byte, min(e.Size, maxDumpRead))
	got, err := s.f.ReadAt(raw, e.Offset-s.base)
	if err != nil && !errors.Is(err, io.EOF) {
		d.err = fmt.Errorf("read %s: %w", s.path, err)
		return next
	}
	raw = raw[:got]
	d.printf("  first bytes: %s\n", hex.EncodeToString(raw[:min(len(raw), dumpPreview)]))
	var sb strings.Builder
	if message.Dump(&sb, raw) == nil {
		d.printf("  fields as stored (UNVERIFIED):\n")
		d.indent(sb.String())
	}
	d.printf("\n")
	return next
}

// fields prints a verified record's fields.
func (d *dumper) fields(rec []byte) {
	var sb strings.Builder
	if err := message.Dump(&sb, rec); err != nil {
		d.printf("  the message does not decode: %v\n\n", err)
		return
	}
	d.indent(sb.String())
	if label := metarec.Describe(rec); label != "" {
		d.printf("  %s\n", label)
	}
	d.printf("\n")
}

func (d *dumper) indent(s string) {
	for _, line := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		d.printf("  %s\n", line)
	}
}
