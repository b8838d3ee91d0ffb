package meta

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func sampleCheckpoint() Checkpoint {
	var c Checkpoint
	c.Set(CPCommitLogFlushed, 1<<30+17)
	c.Set(CPDispatchOffset, 1<<30)
	c.Set(CPTimerQueueOffset, 42)
	c.Set(CPTimerReadTimeMs, 1700000000000)
	c.Set("neg", -1)
	return c
}

func TestCheckpointRoundTripAndGolden(t *testing.T) {
	b, err := EncodeCheckpoint(sampleCheckpoint())
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "checkpoint.hex", []byte(hex.Dump(b)))
	got, err := DecodeCheckpoint(b)
	if err != nil || !maps.Equal(got.Values, sampleCheckpoint().Values) {
		t.Fatalf("DecodeCheckpoint = %v, %v", got, err)
	}
	if v, ok := got.Get(CPTimerQueueOffset); !ok || v != 42 {
		t.Fatalf("Get = %d, %v", v, ok)
	}
	// Empty checkpoint: header + CRC only.
	b, err = EncodeCheckpoint(Checkpoint{})
	if err != nil || len(b) != cpHeaderSize+cpCRCSize {
		t.Fatalf("empty checkpoint: %x, %v", b, err)
	}
	if got, err := DecodeCheckpoint(b); err != nil || len(got.Values) != 0 {
		t.Fatalf("empty decode: %v, %v", got, err)
	}
}

func TestCheckpointBitFlips(t *testing.T) {
	b, err := EncodeCheckpoint(sampleCheckpoint())
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		for bit := range 8 {
			c := bytes.Clone(b)
			c[i] ^= 1 << bit
			if _, err := DecodeCheckpoint(c); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("flip byte %d bit %d: %v", i, bit, err)
			}
		}
	}
	for n := range len(b) {
		if _, err := DecodeCheckpoint(b[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d: %v", n, err)
		}
	}
	if _, err := DecodeCheckpoint(append(bytes.Clone(b), 0)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("trailing byte: %v", err)
	}
}

// reseal recomputes the CRC after editing a checkpoint image.
func reseal(b []byte) []byte {
	body := b[:len(b)-cpCRCSize]
	return binary.BigEndian.AppendUint32(bytes.Clone(body), crc32.Checksum(body, castagnoli))
}

func TestDecodeCheckpointStructure(t *testing.T) {
	good, _ := EncodeCheckpoint(sampleCheckpoint())
	be := binary.BigEndian
	tests := []struct {
		name string
		edit func([]byte)
		want error
	}{
		{"magic", func(b []byte) { b[0] = 'X' }, ErrCorrupt},
		{"version", func(b []byte) { be.PutUint16(b[4:], 2) }, ErrVersion},
		{"flags", func(b []byte) { be.PutUint16(b[6:], 1) }, ErrCorrupt},
		{"count too large", func(b []byte) { be.PutUint32(b[8:], 1<<31) }, ErrCorrupt},
		{"count too small", func(b []byte) { be.PutUint32(b[8:], 4) }, ErrCorrupt},
		{"name length zero", func(b []byte) { b[12] = 0 }, ErrCorrupt},
		{"bad name char", func(b []byte) { b[13] = ' ' }, ErrCorrupt},
		{"names out of order", func(b []byte) { b[13] = 'z' }, ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := bytes.Clone(good)
			tt.edit(b)
			if _, err := DecodeCheckpoint(reseal(b)); !errors.Is(err, tt.want) {
				t.Fatalf("DecodeCheckpoint = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestEncodeCheckpointNames(t *testing.T) {
	for _, name := range []string{"", "has space", "ü", strings.Repeat("n", MaxCheckpointName+1), "a/b"} {
		var c Checkpoint
		c.Set(name, 1)
		if _, err := EncodeCheckpoint(c); !errors.Is(err, ErrInvalidName) {
			t.Errorf("EncodeCheckpoint(%q) = %v, want ErrInvalidName", name, err)
		}
	}
	var c Checkpoint
	c.Set(strings.Repeat("n", MaxCheckpointName), 1)
	c.Set("A-Z.a_z-0.9", 2)
	if _, err := EncodeCheckpoint(c); err != nil {
		t.Fatalf("valid names rejected: %v", err)
	}
}

func TestCheckpointFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "checkpoint")
	c, err := LoadCheckpoint(nil, path)
	if err != nil || c.Values == nil || len(c.Values) != 0 {
		t.Fatalf("LoadCheckpoint(nil, missing) = %v, %v", c, err)
	}
	if err := SaveCheckpoint(nil, path, sampleCheckpoint()); err != nil {
		t.Fatal(err)
	}
	c.Set(CPDispatchOffset, 5)
	if err := SaveCheckpoint(nil, path, c); err != nil { // replaces the file
		t.Fatal(err)
	}
	got, err := LoadCheckpoint(nil, path)
	if err != nil || !maps.Equal(got.Values, c.Values) {
		t.Fatalf("LoadCheckpoint = %v, %v", got, err)
	}
	noTempFiles(t, dir)

	raw, _ := os.ReadFile(path)
	raw[len(raw)/2] ^= 0x10
	mustWrite(t, path, string(raw))
	if _, err := LoadCheckpoint(nil, path); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
		t.Fatalf("corrupt file: %v", err)
	}
	var bad Checkpoint
	bad.Set("bad name", 1)
	if err := SaveCheckpoint(nil, path, bad); !errors.Is(err, ErrInvalidName) {
		t.Fatalf("SaveCheckpoint(nil, bad name) = %v", err)
	}
}

func TestUpdateCheckpoint(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "checkpoint")
	if err := UpdateCheckpoint(nil, path, "a", 1); err != nil { // creates the file
		t.Fatal(err)
	}
	if err := UpdateCheckpoint(nil, path, "b", 2); err != nil {
		t.Fatal(err)
	}
	if err := UpdateCheckpoint(nil, path, "a", 3); err != nil {
		t.Fatal(err)
	}
	got, err := LoadCheckpoint(nil, path)
	if err != nil || !maps.Equal(got.Values, map[string]int64{"a": 3, "b": 2}) {
		t.Fatalf("after updates: %v, %v", got, err)
	}
	if err := UpdateCheckpoint(nil, path, "bad name", 1); !errors.Is(err, ErrInvalidName) {
		t.Fatalf("bad name: %v", err)
	}

	// Concurrent owners of different entries do not lose updates.
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 10 {
				if err := UpdateCheckpoint(nil, path, fmt.Sprintf("w%d", w), int64(i)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	got, err = LoadCheckpoint(nil, path)
	if err != nil || len(got.Values) != 6 || got.Values["w3"] != 9 {
		t.Fatalf("after concurrent updates: %v, %v", got, err)
	}

	// A corrupt file is replaced by the updated entry alone.
	mustWrite(t, path, "garbage")
	if err := UpdateCheckpoint(nil, path, "a", 4); err != nil {
		t.Fatal(err)
	}
	if got, err := LoadCheckpoint(nil, path); err != nil || !maps.Equal(got.Values, map[string]int64{"a": 4}) {
		t.Fatalf("after corrupt: %v, %v", got, err)
	}

	// A file of another version is left alone.
	b, _ := EncodeCheckpoint(Checkpoint{Values: map[string]int64{"x": 1}})
	binary.BigEndian.PutUint16(b[4:], 9)
	future := reseal(b)
	mustWrite(t, path, string(future))
	if err := UpdateCheckpoint(nil, path, "a", 5); !errors.Is(err, ErrVersion) {
		t.Fatalf("future version: %v", err)
	}
	if raw, _ := os.ReadFile(path); !bytes.Equal(raw, future) {
		t.Fatal("future-version file was overwritten")
	}
	noTempFiles(t, dir)
}
