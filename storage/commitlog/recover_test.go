package commitlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// buildTwoSegments writes the fixture most recovery tests damage:
//
//	segment 0:   record 0 @0, record 1 @104, blank @208 (48 bytes)
//	segment 256: record 2 @256, record 3 @360; max offset 464
func buildTwoSegments(t *testing.T, dir string) {
	t.Helper()
	c, err := Open(dir, Options{SegmentSize: 256})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, c, makeRecords(0, 100, 100, 100, 100))
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// damage helpers operate on one segment file.
func truncateTo(size int64) func(t *testing.T, path string) {
	return func(t *testing.T, path string) {
		if err := os.Truncate(path, size); err != nil {
			t.Fatal(err)
		}
	}
}

func appendBytes(b []byte) func(t *testing.T, path string) {
	return func(t *testing.T, path string) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write(b); err != nil {
			t.Fatal(err)
		}
	}
}

func flipByte(pos int64) func(t *testing.T, path string) {
	return func(t *testing.T, path string) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		data[pos] ^= 0x40
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func randomBytes(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// entryBytes returns record seq's entry as the log would store it at off.
func entryBytes(n, seq int, off int64) []byte {
	r := makeRecord(n, seq)
	binary.BigEndian.PutUint64(r[physOffsetPos:], uint64(off))
	return appendEntry(nil, r)
}

func TestRecoverTornTail(t *testing.T) {
	blank := appendBlank(nil, 48)
	badBlank := appendBlank(nil, 47)
	tests := []struct {
		name          string
		segment       int64 // which segment file to damage
		damage        func(t *testing.T, path string)
		wantRecords   int
		wantCutAt     int64 // -1: nothing cut
		wantCutBytes  int64
		wantDeleted   int
		wantMaxOffset int64
		recoverFrom   int64
	}{
		{"clean", 256, func(*testing.T, string) {}, 4, -1, 0, 0, 464, 0},
		{"truncated mid-record", 256, truncateTo(154), 3, 360, 50, 0, 360, 0},
		{"truncated mid-header", 256, truncateTo(108), 3, 360, 4, 0, 360, 0},
		{"truncated at record start", 256, truncateTo(104), 3, -1, 0, 0, 360, 0},
		{"garbage appended", 256, appendBytes(randomBytes(30)), 4, 464, 30, 0, 464, 0},
		{"zeros appended", 256, appendBytes(make([]byte, 40)), 4, 464, 40, 0, 464, 0},
		{"flipped body byte in last record", 256, flipByte(104 + 60), 3, 360, 104, 0, 360, 0},
		{"flipped TOTALSIZE of last record", 256, flipByte(104 + 2), 3, 360, 104, 0, 360, 0},
		{"flipped checksum of last record", 256, flipByte(207), 3, 360, 104, 0, 360, 0},
		{"stale entry with valid checksum", 256, appendBytes(entryBytes(40, 9, 256)), 4, 464, 44, 0, 464, 0},
		{"blank marker with wrong size", 256, appendBytes(badBlank), 4, 464, 8, 0, 464, 0},
		{"blank marker at log end", 256, appendBytes(blank), 4, 464, 8, 0, 464, 0},
		{"bytes after blank marker", 0, appendBytes([]byte{1, 2, 3}), 4, 216, 3, 0, 464, 1},
		{"whole last segment garbage", 256, func(t *testing.T, p string) {
			if err := os.WriteFile(p, randomBytes(200), 0o644); err != nil {
				t.Fatal(err)
			}
		}, 2, 256, 200, 0, 256, 0},
		{"empty last segment after short one", 512, func(t *testing.T, p string) {
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}, 4, 464, 0, 1, 464, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			buildTwoSegments(t, dir)
			tt.damage(t, segPath(dir, tt.segment))

			c := mustOpen(t, dir, Options{SegmentSize: 256, RecoverFrom: tt.recoverFrom})
			info := c.Recovery()
			if info.TruncatedAt != tt.wantCutAt || info.TruncatedBytes != tt.wantCutBytes || info.DeletedSegments != tt.wantDeleted {
				t.Fatalf("recovery %+v, want cut at %d, %d bytes, %d deleted", info, tt.wantCutAt, tt.wantCutBytes, tt.wantDeleted)
			}
			if (info.Reason != "") != (tt.wantCutAt >= 0) {
				t.Fatalf("reason %q with cut at %d", info.Reason, info.TruncatedAt)
			}
			if c.MaxOffset() != tt.wantMaxOffset || c.FlushedOffset() != tt.wantMaxOffset {
				t.Fatalf("MaxOffset %d FlushedOffset %d, want %d", c.MaxOffset(), c.FlushedOffset(), tt.wantMaxOffset)
			}
			recs, _ := readAll(t, c)
			checkSeqs(t, recs, tt.wantRecords)

			// The log keeps working and a second recovery is clean.
			mustAppend(t, c, makeRecords(tt.wantRecords, 100))
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			c = mustOpen(t, dir, Options{SegmentSize: 256})
			if info := c.Recovery(); info.TruncatedAt != -1 {
				t.Fatalf("second recovery cut: %+v", info)
			}
			recs, _ = readAll(t, c)
			checkSeqs(t, recs, tt.wantRecords+1)
		})
	}
}

func TestRecoverFrom(t *testing.T) {
	tests := []struct {
		name        string
		recoverFrom int64
		wantFrom    int64
		wantCutAt   int64
		wantDeleted int
	}{
		{"default scans only the last segment", 0, 256, -1, 0},
		{"from the damaged segment", 1, 0, 104, 1},
		{"from below the first segment", -7, 256, -1, 0},
		{"inside the last segment", 300, 256, -1, 0},
		{"beyond the log", 1 << 40, 256, -1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			buildTwoSegments(t, dir)
			truncateTo(150)(t, segPath(dir, 0)) // record 1 torn, segment 256 intact
			c := mustOpen(t, dir, Options{SegmentSize: 256, RecoverFrom: tt.recoverFrom})
			info := c.Recovery()
			if info.ScannedFrom != tt.wantFrom || info.TruncatedAt != tt.wantCutAt || info.DeletedSegments != tt.wantDeleted {
				t.Fatalf("recovery %+v, want from %d cut at %d deleted %d", info, tt.wantFrom, tt.wantCutAt, tt.wantDeleted)
			}
			if tt.wantCutAt >= 0 {
				recs, _ := readAll(t, c)
				checkSeqs(t, recs, 1)
				return
			}
			// Undetected damage is still caught by readers.
			if _, _, err := c.Read(104); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Read of the torn record: %v", err)
			}
		})
	}
}

// TestBitFlipDetectedByRead flips a byte in the middle of the log (outside
// the part recovery scans) and checks that readers report ErrCorrupt.
func TestBitFlipDetectedByRead(t *testing.T) {
	dir := t.TempDir()
	buildTwoSegments(t, dir)
	c := mustOpen(t, dir, Options{SegmentSize: 256})
	flipByte(104+50)(t, segPath(dir, 0))
	if _, _, err := c.Read(104); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Read: %v", err)
	}
	if _, err := c.ReadAt(104, 100); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("ReadAt: %v", err)
	}
	if _, _, err := c.Read(0); err != nil {
		t.Fatalf("Read of the intact record: %v", err)
	}
	// Reopen: recovery does not scan segment 0, Read still detects.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c = mustOpen(t, dir, Options{SegmentSize: 256})
	if _, _, err := c.Read(104); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Read after reopen: %v", err)
	}
}

// TestBitRot flips one random byte of a written log at a time and checks
// that a full read detects it (every stored byte is covered by a check).
func TestBitRot(t *testing.T) {
	dir := t.TempDir()
	c := mustOpen(t, dir, Options{SegmentSize: 512})
	var sizes []int
	for i := 0; i < 40; i++ {
		sizes = append(sizes, 36+i*7%150)
	}
	mustAppend(t, c, makeRecords(0, sizes...))
	files := segmentFiles(t, dir)
	rng := rand.New(rand.NewPCG(7, 7))
	for i := 0; i < 100; i++ {
		path := dir + "/" + files[rng.IntN(len(files))]
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		pos := rng.IntN(len(data))
		bit := byte(1) << rng.IntN(8)
		data[pos] ^= bit
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if !readDetectsCorruption(c) {
			t.Fatalf("flip of bit %#x at %s:%d not detected", bit, path, pos)
		}
		data[pos] ^= bit
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	recs, _ := readAll(t, c)
	checkSeqs(t, recs, len(sizes))
}

// readDetectsCorruption reads the whole log and reports whether a read
// failed with ErrCorrupt.
func readDetectsCorruption(c *CommitLog) bool {
	off := c.MinOffset()
	for {
		_, next, err := c.Read(off)
		if err != nil {
			return errors.Is(err, ErrCorrupt)
		}
		off = next
	}
}

func TestRecoveryIsLogged(t *testing.T) {
	dir := t.TempDir()
	buildTwoSegments(t, dir)
	truncateTo(154)(t, segPath(dir, 256))
	var buf bytes.Buffer
	mustOpen(t, dir, Options{SegmentSize: 256, Logger: zerolog.New(&buf)})
	out := buf.String()
	for _, want := range []string{`"level":"warn"`, `"truncated_at":360`, `"truncated_bytes":50`, `"reason":"torn record"`} {
		if !strings.Contains(out, want) {
			t.Fatalf("log %q lacks %s", out, want)
		}
	}
}
