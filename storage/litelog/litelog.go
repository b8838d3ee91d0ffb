// Package litelog is the lite topics' index (RocketMQ 5.5's lite topics,
// RIP-83; docs/lite.md): one append-only file for every lite topic of the
// broker, not a file per lite topic. It records which CommitLog record
// belongs to which lite topic, what each consumer group acknowledged, and
// which lite topics expired; replaying it rebuilds the broker's lite state.
//
// The file <data>/lite/lite.log is an 8-byte magic "WMQLITE1" followed by
// records, all integers little-endian:
//
//	+---------+---------+------+--------+--------+---------+--------+---------+-------+---------+-------+
//	| len u32 | crc u32 | kind | off i64| ms i64 | plen u16| parent | llen u16| lite  | glen u16| group |
//	+---------+---------+------+--------+--------+---------+--------+---------+-------+---------+-------+
//	  len: bytes after crc; crc: CRC-32C of those bytes
//
// kind 1 (Message): the record at CommitLog offset off, stored at ms, is
// the next message of lite topic (parent, lite); group empty.
// kind 2 (Ack): group consumed every message of (parent, lite) up to and
// including the one at CommitLog offset off.
// kind 3 (Expire): (parent, lite) expired at ms; its messages and
// positions are gone.
// kind 4 (Checkpoint): every lite message stored in the CommitLog below
// off is recorded before this record (parent, lite and group empty).
//
// A torn or corrupt tail (a length past the end, a CRC mismatch) ends the
// replay and is cut off. The file is not fsynced per record: Message
// records are rebuilt from the CommitLog past the last one (the broker
// scans from there at start), a lost Ack redelivers a message (at least
// once), a lost Expire expires the lite topic again. Compact rewrites the
// live records into a new file and renames it over the old one.
//
// The same record layout serves the lite ack journal's bodies (DecodeAll)
// and the spill store of evicted lite topics (spill.go, which adds kind 5,
// Evict).
package litelog

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
)

// Magic opens a lite log.
const Magic = "WMQLITE1"

// Kind is a record's kind.
type Kind uint8

// The kinds of record.
const (
	KindMessage    Kind = 1
	KindAck        Kind = 2
	KindExpire     Kind = 3
	KindCheckpoint Kind = 4
)

// Record is one record of the log.
type Record struct {
	Kind   Kind
	Offset int64 // a CommitLog offset
	Ms     int64 // a time, Unix ms
	Parent string
	Lite   string
	Group  string
}

// ErrCorrupt means a record failed its checks.
var ErrCorrupt = errors.New("litelog: corrupt record")

const headerLen = 8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Append encodes r at the end of dst.
func Append(dst []byte, r *Record) []byte {
	n := 1 + 8 + 8 + 2 + len(r.Parent) + 2 + len(r.Lite) + 2 + len(r.Group)
	start := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(n))
	dst = binary.LittleEndian.AppendUint32(dst, 0)
	body := len(dst)
	dst = append(dst, byte(r.Kind))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(r.Offset))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(r.Ms))
	for _, s := range []string{r.Parent, r.Lite, r.Group} {
		dst = binary.LittleEndian.AppendUint16(dst, uint16(len(s)))
		dst = append(dst, s...)
	}
	binary.LittleEndian.PutUint32(dst[start+4:], crc32.Checksum(dst[body:], castagnoli))
	return dst
}

// decode reads the record body b (after len and crc).
func decode(b []byte) (Record, error) {
	if len(b) < 17+6 {
		return Record{}, ErrCorrupt
	}
	r := Record{Kind: Kind(b[0]), Offset: int64(binary.LittleEndian.Uint64(b[1:])), Ms: int64(binary.LittleEndian.Uint64(b[9:]))}
	if r.Kind < KindMessage || r.Kind > KindEvict {
		return Record{}, ErrCorrupt
	}
	p := b[17:]
	var strs [3]string
	for i := range strs {
		if len(p) < 2 {
			return Record{}, ErrCorrupt
		}
		n := int(binary.LittleEndian.Uint16(p))
		if len(p) < 2+n {
			return Record{}, ErrCorrupt
		}
		strs[i] = string(p[2 : 2+n])
		p = p[2+n:]
	}
	if len(p) != 0 {
		return Record{}, ErrCorrupt
	}
	r.Parent, r.Lite, r.Group = strs[0], strs[1], strs[2]
	return r, nil
}

// Log is an open lite log. Not safe for concurrent use: one goroutine
// (the broker's lite writer) appends.
type Log struct {
	path string
	f    *os.File
	w    *bufio.Writer
	size int64
}

// Path is the log's file in dir.
func Path(dir string) string { return filepath.Join(dir, "lite.log") }

// Open opens (or creates) the log in dir, calls each for every valid
// record in order, cuts a torn tail, and returns the log ready to append.
func Open(dir string, each func(*Record)) (*Log, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("litelog: %w", err)
	}
	path := Path(dir)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("litelog: %w", err)
	}
	good, err := replay(f, each)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("litelog %s: %w", path, err)
	}
	if good == 0 {
		if _, err := f.WriteAt([]byte(Magic), 0); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("litelog %s: %w", path, err)
		}
		good = headerLen
	}
	if err := f.Truncate(good); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("litelog %s: cut tail: %w", path, err)
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("litelog %s: %w", path, err)
	}
	return &Log{path: path, f: f, w: bufio.NewWriterSize(f, 256<<10), size: good}, nil
}

// Read calls each for every valid record of the log in dir, read only
// (for tools and tests); a missing log has none.
func Read(dir string, each func(*Record)) error {
	f, err := os.Open(Path(dir))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("litelog: %w", err)
	}
	defer f.Close()
	if _, err := replay(f, each); err != nil {
		return fmt.Errorf("litelog %s: %w", Path(dir), err)
	}
	return nil
}

// Exists reports whether dir holds a lite log.
func Exists(dir string) bool {
	_, err := os.Stat(Path(dir))
	return err == nil
}

// replay reads f's records and returns the length of its valid part (0:
// no header yet).
func replay(f *os.File, each func(*Record)) (int64, error) {
	r := bufio.NewReaderSize(f, 1<<20)
	hdr := make([]byte, headerLen)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return 0, nil // empty or shorter than the header: a new log
	}
	if string(hdr) != Magic {
		return 0, fmt.Errorf("%w: bad magic %q", ErrCorrupt, hdr)
	}
	good := int64(headerLen)
	var head [8]byte
	var body []byte
	for {
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return good, nil
		}
		n := binary.LittleEndian.Uint32(head[:])
		if n > 1<<20 {
			return good, nil
		}
		if cap(body) < int(n) {
			body = make([]byte, n)
		}
		body = body[:n]
		if _, err := io.ReadFull(r, body); err != nil {
			return good, nil
		}
		if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(head[4:]) {
			return good, nil
		}
		rec, err := decode(body)
		if err != nil {
			return good, nil
		}
		each(&rec)
		good += 8 + int64(n)
	}
}

// Write appends records (buffered: Flush writes them out).
func (l *Log) Write(recs []Record) error {
	var buf []byte
	for i := range recs {
		buf = Append(buf[:0], &recs[i])
		if _, err := l.w.Write(buf); err != nil {
			return fmt.Errorf("litelog %s: %w", l.path, err)
		}
		l.size += int64(len(buf))
	}
	return nil
}

// Flush writes the buffered records to the file (no fsync).
func (l *Log) Flush() error {
	if err := l.w.Flush(); err != nil {
		return fmt.Errorf("litelog %s: %w", l.path, err)
	}
	return nil
}

// Size is the log's length in bytes.
func (l *Log) Size() int64 { return l.size }

// Compact replaces the log by live (the records that rebuild the state
// in force): written to a temporary file, fsynced, renamed over the log,
// the directory fsynced.
func (l *Log) Compact(live []Record) error {
	if err := l.Flush(); err != nil {
		return err
	}
	tmp := l.path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("litelog compact: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	size := int64(headerLen)
	_, _ = w.WriteString(Magic)
	var buf []byte
	for i := range live {
		buf = Append(buf[:0], &live[i])
		_, _ = w.Write(buf)
		size += int64(len(buf))
	}
	err = w.Flush()
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, l.path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("litelog compact %s: %w", l.path, err)
	}
	syncDir(filepath.Dir(l.path))
	_ = l.f.Close()
	nf, err := os.OpenFile(l.path, os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("litelog reopen %s: %w", l.path, err)
	}
	l.f, l.w, l.size = nf, bufio.NewWriterSize(nf, 256<<10), size
	return nil
}

// Close flushes, fsyncs and closes the log.
func (l *Log) Close() error {
	err := l.Flush()
	if serr := l.f.Sync(); err == nil && serr != nil {
		err = fmt.Errorf("litelog %s: %w", l.path, serr)
	}
	if cerr := l.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("litelog %s: %w", l.path, cerr)
	}
	return err
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}

// DecodeAll calls each for every record of b, a run of records as Append
// encodes them (the body of a lite ack journal record, docs/lite.md); a
// record that fails its checks ends it with ErrCorrupt.
func DecodeAll(b []byte, each func(*Record)) error {
	for len(b) > 0 {
		if len(b) < 8 {
			return fmt.Errorf("%w: %d bytes left, short of a header", ErrCorrupt, len(b))
		}
		n := binary.LittleEndian.Uint32(b)
		if uint64(n) > uint64(len(b)-8) {
			return fmt.Errorf("%w: length %d past the end", ErrCorrupt, n)
		}
		body := b[8 : 8+n]
		if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(b[4:]) {
			return fmt.Errorf("%w: crc mismatch", ErrCorrupt)
		}
		rec, err := decode(body)
		if err != nil {
			return err
		}
		each(&rec)
		b = b[8+n:]
	}
	return nil
}
