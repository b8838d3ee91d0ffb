package raftstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/hashicorp/raft"
)

// Constants of the raft.log format (package doc). They are part of the
// on-disk format and must not change.
const (
	logMagic     = "WMQRLOG1"
	frameHeader  = 8 // length:u32 crc:u32
	kindEntries  = 1
	kindDelete   = 2
	entryFixed   = 8 + 8 + 1 + 8 + 4 + 4 // index term type appendedAt dataLen extLen
	minBody      = 1 + 4                 // kind + count (the smallest valid body)
	deleteBody   = 1 + 8 + 8
	rewriteChunk = 512 // entries per frame when the live log is rewritten
)

// MaxFrame is the largest frame body accepted: a StoreLogs batch larger
// than this is refused, a larger length at Open is damage.
const MaxFrame = 64 << 20

// ErrCorrupt marks damage to synced data that recovery cannot cut away:
// test it with errors.Is.
var ErrCorrupt = errors.New("raftstore: corrupt")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// op is one decoded frame: entries to store, or a range to delete.
type op struct {
	entries []*raft.Log
	lo, hi  uint64 // kindDelete: the range deleted
	del     bool
}

// appendEntriesFrame appends the frame storing logs to dst.
func appendEntriesFrame(dst []byte, logs []*raft.Log) ([]byte, error) {
	size := 1 + 4
	for _, l := range logs {
		size += entryFixed + len(l.Data) + len(l.Extensions)
	}
	if size > MaxFrame {
		return dst, fmt.Errorf("raftstore: a batch of %d entries is %d bytes, more than MaxFrame %d", len(logs), size, MaxFrame)
	}
	start := len(dst)
	dst = binary.BigEndian.AppendUint32(dst, uint32(size))
	dst = binary.BigEndian.AppendUint32(dst, 0) // crc, set below
	dst = append(dst, kindEntries)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(logs)))
	for _, l := range logs {
		dst = binary.BigEndian.AppendUint64(dst, l.Index)
		dst = binary.BigEndian.AppendUint64(dst, l.Term)
		dst = append(dst, byte(l.Type))
		var at int64
		if !l.AppendedAt.IsZero() {
			at = l.AppendedAt.UnixNano()
		}
		dst = binary.BigEndian.AppendUint64(dst, uint64(at))
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(l.Data)))
		dst = append(dst, l.Data...)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(l.Extensions)))
		dst = append(dst, l.Extensions...)
	}
	binary.BigEndian.PutUint32(dst[start+4:], crc32.Checksum(dst[start+frameHeader:], castagnoli))
	return dst, nil
}

// appendDeleteFrame appends the frame deleting [lo, hi] to dst.
func appendDeleteFrame(dst []byte, lo, hi uint64) []byte {
	start := len(dst)
	dst = binary.BigEndian.AppendUint32(dst, deleteBody)
	dst = binary.BigEndian.AppendUint32(dst, 0)
	dst = append(dst, kindDelete)
	dst = binary.BigEndian.AppendUint64(dst, lo)
	dst = binary.BigEndian.AppendUint64(dst, hi)
	binary.BigEndian.PutUint32(dst[start+4:], crc32.Checksum(dst[start+frameHeader:], castagnoli))
	return dst
}

// frameAt returns the body of the frame starting at buf[0] and the frame's
// whole size, or ok false when no intact frame starts there.
func frameAt(buf []byte) (body []byte, size int, ok bool) {
	if len(buf) < frameHeader {
		return nil, 0, false
	}
	n := binary.BigEndian.Uint32(buf)
	if n < minBody || n > MaxFrame || uint64(n) > uint64(len(buf)-frameHeader) {
		return nil, 0, false
	}
	body = buf[frameHeader : frameHeader+int(n)]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(buf[4:]) {
		return nil, 0, false
	}
	return body, frameHeader + int(n), true
}

// decodeBody parses an intact (CRC-checked) frame body. The entries'
// byte slices are copies, independent of body.
func decodeBody(body []byte) (op, error) {
	switch body[0] {
	case kindDelete:
		if len(body) != deleteBody {
			return op{}, fmt.Errorf("delete frame of %d bytes, want %d", len(body), deleteBody)
		}
		return op{del: true, lo: binary.BigEndian.Uint64(body[1:]), hi: binary.BigEndian.Uint64(body[9:])}, nil
	case kindEntries:
	default:
		return op{}, fmt.Errorf("unknown frame kind %d", body[0])
	}
	count := binary.BigEndian.Uint32(body[1:])
	p := body[5:]
	if uint64(count) > uint64(len(p)/entryFixed) {
		return op{}, fmt.Errorf("entries frame claims %d entries in %d bytes", count, len(p))
	}
	o := op{entries: make([]*raft.Log, 0, count)}
	for i := uint32(0); i < count; i++ {
		if len(p) < entryFixed-4 {
			return op{}, fmt.Errorf("entry %d: short header", i)
		}
		l := &raft.Log{
			Index: binary.BigEndian.Uint64(p),
			Term:  binary.BigEndian.Uint64(p[8:]),
			Type:  raft.LogType(p[16]),
		}
		if at := int64(binary.BigEndian.Uint64(p[17:])); at != 0 {
			l.AppendedAt = time.Unix(0, at)
		}
		var err error
		if l.Data, p, err = chunk(p[25:]); err != nil {
			return op{}, fmt.Errorf("entry %d (index %d) data: %w", i, l.Index, err)
		}
		if l.Extensions, p, err = chunk(p); err != nil {
			return op{}, fmt.Errorf("entry %d (index %d) extensions: %w", i, l.Index, err)
		}
		o.entries = append(o.entries, l)
	}
	if len(p) != 0 {
		return op{}, fmt.Errorf("%d bytes after the last entry", len(p))
	}
	return o, nil
}

// chunk splits a u32-length-prefixed byte string off p (a copy, nil when
// empty).
func chunk(p []byte) (v, rest []byte, err error) {
	if len(p) < 4 {
		return nil, nil, errors.New("short length")
	}
	n := binary.BigEndian.Uint32(p)
	if uint64(n) > uint64(len(p)-4) {
		return nil, nil, fmt.Errorf("length %d beyond the frame", n)
	}
	if n > 0 {
		v = append([]byte(nil), p[4:4+n]...)
	}
	return v, p[4+n:], nil
}

// scanResult is what replaying a log file's bytes gave.
type scanResult struct {
	ops  []op
	end  int64 // end of the last intact frame: the file is cut here
	torn int64 // bytes after end (0: the file ended cleanly)
}

// scanLog replays a whole raft.log image (magic included). name is for
// errors only.
func scanLog(name string, buf []byte) (scanResult, error) {
	var r scanResult
	off := len(logMagic)
	for off < len(buf) {
		body, size, ok := frameAt(buf[off:])
		if !ok {
			// Torn tail, unless some intact frame follows: only the
			// frame being written when the power went can be bad.
			for p := off + 1; p+frameHeader <= len(buf); p++ {
				if _, _, ok := frameAt(buf[p:]); ok {
					return r, fmt.Errorf("%w: %s: bad frame at offset %d (an intact frame follows at %d)", ErrCorrupt, name, off, p)
				}
			}
			r.end, r.torn = int64(off), int64(len(buf)-off)
			return r, nil
		}
		o, err := decodeBody(body)
		if err != nil {
			return r, fmt.Errorf("%w: %s: frame at offset %d: %w", ErrCorrupt, name, off, err)
		}
		r.ops = append(r.ops, o)
		off += size
	}
	r.end = int64(off)
	return r, nil
}
