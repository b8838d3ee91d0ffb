package message

import (
	"bytes"
	"encoding/binary"
	"errors"
	"maps"
	"reflect"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

func sampleBatch() []BatchEntry {
	return []BatchEntry{
		{Flag: 0, Body: []byte("first"), Properties: EncodeProperties(map[string]string{PropTags: "A"})},
		{Flag: 9, Body: []byte{}, Properties: []byte{}},
		{Flag: -1, Body: bytes.Repeat([]byte{0xFF}, 300), Properties: EncodeProperties(map[string]string{PropKeys: "k"})},
	}
}

func TestBatchRoundTrip(t *testing.T) {
	in := sampleBatch()
	enc, err := EncodeBatch(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := 3*batchFixedSize + 5 + 300 + len(in[0].Properties) + len(in[2].Properties); len(enc) != want {
		t.Fatalf("EncodeBatch wrote %d bytes, want %d", len(enc), want)
	}
	got, err := DecodeBatch(enc)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, in) {
		t.Fatalf("DecodeBatch = %+v, want %+v", got, in)
	}
}

// TestDecodeGoClientBatch decodes a body made by the Go producer itself.
func TestDecodeGoClientBatch(t *testing.T) {
	var msgs []*primitive.Message
	for i, body := range []string{"m0", "m1 longer", ""} {
		m := primitive.NewMessage("BatchTopic", []byte(body))
		m.Flag = int32(i)
		m.WithTag("T" + body)
		m.WithKeys([]string{"key", body})
		msgs = append(msgs, m)
	}
	entries, err := DecodeBatch(producer.MarshalMessageBatch(msgs...))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(msgs) {
		t.Fatalf("decoded %d entries, want %d", len(entries), len(msgs))
	}
	for i, e := range entries {
		if e.Flag != msgs[i].Flag || !bytes.Equal(e.Body, msgs[i].Body) {
			t.Errorf("entry %d: flag %d body %q", i, e.Flag, e.Body)
		}
		if got := DecodeProperties(e.Properties); !maps.Equal(got, msgs[i].GetProperties()) {
			t.Errorf("entry %d: properties %v, want %v", i, got, msgs[i].GetProperties())
		}
	}
}

func TestDecodeBatchErrors(t *testing.T) {
	be := binary.BigEndian
	good := func() []byte { b, _ := EncodeBatch(sampleBatch()[:1]); return b }
	tests := []struct {
		name string
		in   func() []byte
	}{
		{"empty", func() []byte { return nil }},
		{"short header", func() []byte { return good()[:21] }},
		{"truncated entry", func() []byte { b := good(); return b[:len(b)-1] }},
		{"trailing garbage", func() []byte { return append(good(), 1, 2, 3) }},
		{"total size too small", func() []byte { b := good(); be.PutUint32(b, 21); return b }},
		{"total size negative", func() []byte { b := good(); be.PutUint32(b, 0xFFFFFFF0); return b }},
		{"total size beyond input", func() []byte { b := good(); be.PutUint32(b, uint32(len(b)+1)); return b }},
		{"body length beyond entry", func() []byte { b := good(); be.PutUint32(b[16:], 1000); return b }},
		{"body length negative", func() []byte { b := good(); be.PutUint32(b[16:], 0xFFFFFFFF); return b }},
		{"properties length mismatch", func() []byte { b := good(); be.PutUint16(b[20+5:], 1); return b }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := DecodeBatch(tt.in()); !errors.Is(err, ErrBadBatch) {
				t.Fatalf("DecodeBatch = %v, want ErrBadBatch", err)
			}
		})
	}
}

func TestEncodeBatchErrors(t *testing.T) {
	_, err := EncodeBatch([]BatchEntry{{Properties: make([]byte, 1<<16)}})
	if !errors.Is(err, ErrBadBatch) {
		t.Fatalf("EncodeBatch with oversized properties = %v", err)
	}
}
