// Package testzone makes up time zones for tests: it encodes a zone as a
// TZif file (RFC 8536), the format of the IANA time zone database, and
// writes it under a directory that a process reads zones from when its
// ZONEINFO environment variable names it (Go's time.LoadLocation looks
// there before the system database). A zone's clock changes can then be
// seconds after a test starts, so a broker process that cannot be moved
// in time still crosses a daylight-saving change (docs/timer.md,
// "Recurring timers", "Daylight saving in a test").
//
// The file is version 2: a 44-byte header and a data block with 32-bit
// transition times (the version 1 part), then the same header and block
// again with 64-bit times, then an empty footer ("\n\n": no rule after the
// last change, whose offset stays). Header, all integers big-endian:
//
//	0  "TZif"   4 bytes, magic
//	4  '2'      1 byte, version
//	5  zeros    15 bytes
//	20 isutcnt  4 bytes, 0: no UT/local indicators
//	24 isstdcnt 4 bytes, 0: no standard/wall indicators
//	28 leapcnt  4 bytes, 0: no leap seconds
//	32 timecnt  4 bytes, the number of changes
//	36 typecnt  4 bytes, changes + 1 (type 0 is the offset before the first change)
//	40 charcnt  4 bytes, the designations' bytes, each NUL-terminated
//
// Data block: timecnt transition times (int32 or int64 seconds since the
// epoch, ascending), timecnt type indexes (1 byte each; change i uses type
// i+1), typecnt local time types of 6 bytes (int32 UT offset in seconds,
// 1 byte isdst, 1 byte index of the designation), then the designations.
package testzone

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Offset is a local time type: a designation such as "TST" (3 to 6
// letters, digits, + or -), an offset from UTC in seconds (any number of
// seconds, not only whole hours) and whether it is daylight-saving time.
type Offset struct {
	Name    string
	Seconds int32
	DST     bool
}

// Change is a clock change: from At on, the zone's offset is To.
type Change struct {
	At time.Time
	To Offset
}

// Zone is a made-up zone: Initial before the first change, then each
// change's offset from its time on.
type Zone struct {
	Initial Offset
	Changes []Change
}

// maxChanges keeps type and designation indexes within their byte.
const maxChanges = 32

// ErrInvalid marks every refusal of TZif.
var ErrInvalid = errors.New("invalid test zone")

// TZif encodes z in the TZif format (version 2). It refuses more than 32
// changes, changes out of order or before 1901 / after 2038 (the version 1 block's 32-bit
// times), offsets beyond ±25 h and designations RFC 8536 does not allow.
func TZif(z Zone) ([]byte, error) {
	if len(z.Changes) > maxChanges {
		return nil, fmt.Errorf("%w: %d changes, at most %d", ErrInvalid, len(z.Changes), maxChanges)
	}
	types := []Offset{z.Initial}
	for i, c := range z.Changes {
		if i > 0 && !c.At.After(z.Changes[i-1].At) {
			return nil, fmt.Errorf("%w: change %d at %s is not after change %d", ErrInvalid, i, c.At, i-1)
		}
		if s := c.At.Unix(); s < math.MinInt32 || s > math.MaxInt32 {
			return nil, fmt.Errorf("%w: change %d at %s is out of the 32-bit range", ErrInvalid, i, c.At)
		}
		types = append(types, c.To)
	}
	var chars []byte
	for _, o := range types {
		if err := checkOffset(o); err != nil {
			return nil, err
		}
		chars = append(append(chars, o.Name...), 0)
	}
	out := block(nil, '2', z.Changes, types, chars, 4)
	out = block(out, '2', z.Changes, types, chars, 8)
	return append(out, '\n', '\n'), nil
}

func checkOffset(o Offset) error {
	if o.Seconds < -25*3600 || o.Seconds > 25*3600 {
		return fmt.Errorf("%w: offset %q of %d s is beyond ±25 h", ErrInvalid, o.Name, o.Seconds)
	}
	if len(o.Name) < 3 || len(o.Name) > 6 || strings.Trim(o.Name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-") != "" {
		return fmt.Errorf("%w: designation %q is not 3 to 6 letters, digits, + or -", ErrInvalid, o.Name)
	}
	return nil
}

// block appends one header and data block with timeSize-byte times.
func block(out []byte, version byte, changes []Change, types []Offset, chars []byte, timeSize int) []byte {
	out = append(out, "TZif"...)
	out = append(out, version)
	out = append(out, make([]byte, 15)...)
	for _, n := range []int{0, 0, 0, len(changes), len(types), len(chars)} {
		out = binary.BigEndian.AppendUint32(out, uint32(n))
	}
	for _, c := range changes {
		if timeSize == 4 {
			out = binary.BigEndian.AppendUint32(out, uint32(int32(c.At.Unix())))
		} else {
			out = binary.BigEndian.AppendUint64(out, uint64(c.At.Unix()))
		}
	}
	for i := range changes {
		out = append(out, byte(i+1))
	}
	idx := 0
	for _, o := range types {
		out = binary.BigEndian.AppendUint32(out, uint32(o.Seconds))
		dst := byte(0)
		if o.DST {
			dst = 1
		}
		out = append(out, dst, byte(idx))
		idx += len(o.Name) + 1
	}
	return append(out, chars...)
}

// Write encodes z and writes it as dir/name (name such as "Test/DST",
// its directories created), where a process with ZONEINFO=dir finds it
// by time.LoadLocation(name).
func Write(dir, name string, z Zone) error {
	if !filepath.IsLocal(name) {
		return fmt.Errorf("%w: zone name %q is not a relative path", ErrInvalid, name)
	}
	data, err := TZif(z)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("test zone %s: %w", name, err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("test zone %s: %w", name, err)
	}
	return nil
}

// Fires is the oracle of the daylight-saving rules (docs/timer.md, "When
// it fires"), by brute force: every whole second after from up to and
// including to whose wall-clock time in loc matches, except one whose
// wall-clock time is not after the previous fire's (for the first fire,
// from's): a repeated wall time fires at its first instant, and once
// only. A wall time a spring-forward change skips is the wall time of no
// instant, so it never fires.
func Fires(loc *time.Location, match func(wall time.Time) bool, from, to time.Time) []time.Time {
	wallOf := func(t time.Time) time.Time {
		w := t.In(loc)
		return time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), 0, time.UTC)
	}
	var out []time.Time
	last := wallOf(from)
	for s := from.Truncate(time.Second).Add(time.Second); !s.After(to); s = s.Add(time.Second) {
		if wall := wallOf(s); match(s.In(loc)) && wall.After(last) {
			out = append(out, s)
			last = wall
		}
	}
	return out
}
