package ha

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden frames in testdata")

// goldenFrames are the frames kept in testdata, one file each.
var goldenFrames = map[string]Frame{
	"handshake.bin": Handshake{Version: Version, ReplicaID: 2, Epoch: 3, MaxOffset: 4096,
		Epochs: []Epoch{{1, 0}, {3, 2048}}},
	"handshake_reply.bin":         HandshakeReply{OK: true, MasterEpoch: 3, MaxOffset: 8192, Epochs: []Epoch{{1, 0}, {3, 2048}}},
	"handshake_reply_refused.bin": HandshakeReply{Reason: "not master (replica)", MasterEpoch: 3},
	"transfer.bin":                Transfer{Offset: 4096, Epoch: 3, EpochStart: 2048, Confirmed: 4000, Body: []byte("0123456789abcdef")},
	"heartbeat.bin":               Transfer{Offset: 8192, Epoch: 3, EpochStart: 2048, Confirmed: 8192},
	"ack.bin":                     Ack{ReplicaID: 2, Epoch: 3, MaxOffset: 8192},
}

func TestGoldenFrames(t *testing.T) {
	for name, f := range goldenFrames {
		b := AppendFrame(nil, f)
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v (run with -update)", name, err)
		}
		if !bytes.Equal(b, want) {
			t.Fatalf("%s: encoding changed:\n got %x\nwant %x", name, b, want)
		}
		got, err := Decode(want)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, f) {
			t.Fatalf("%s: decoded %+v, want %+v", name, got, f)
		}
	}
}

func TestReaderStream(t *testing.T) {
	var stream []byte
	var order []Frame
	for _, f := range goldenFrames {
		stream = AppendFrame(stream, f)
		order = append(order, f)
	}
	r := NewReader(bytes.NewReader(stream))
	for i, want := range order {
		got, err := r.Next()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("frame %d: %+v, want %+v", i, got, want)
		}
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("end: %v", err)
	}
	// A torn frame is an unexpected EOF, a flipped bit a checksum error.
	torn := NewReader(bytes.NewReader(stream[:len(stream)-3]))
	var err error
	for err == nil {
		_, err = torn.Next()
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("torn stream: %v", err)
	}
	flipped := bytes.Clone(stream)
	flipped[10] ^= 1
	if _, err := NewReader(bytes.NewReader(flipped)).Next(); !errors.Is(err, ErrFrame) {
		t.Fatalf("flipped bit: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	for _, g := range goldenFrames {
		f.Add(AppendFrame(nil, g))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := Decode(b)
		if err != nil {
			return
		}
		if again := AppendFrame(nil, fr); !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs:\n in %x\nout %x", b, again)
		}
		if _, err := NewReader(bytes.NewReader(b)).Next(); err != nil {
			t.Fatalf("Reader refuses what Decode took: %v", err)
		}
	})
}

func FuzzDecodeEpochFile(f *testing.F) {
	f.Add(EncodeEpochFile([]Epoch{{1, 0}, {2, 10}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		es, err := DecodeEpochFile(b)
		if err != nil {
			return
		}
		for i := 1; i < len(es); i++ {
			if !after(es[i-1], es[i]) {
				t.Fatalf("decoded out of order: %v", es)
			}
		}
		if len(es) > 0 && !bytes.HasPrefix(b, EncodeEpochFile(es)) {
			t.Fatalf("decoded entries are not a prefix of the input")
		}
	})
}
