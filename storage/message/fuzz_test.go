package message

import (
	"bytes"
	"errors"
	"maps"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// FuzzDecode checks that Decode never panics, agrees with ParseLayout and the
// Peek functions, and that a canonical V1 record re-encodes to its own bytes.
func FuzzDecode(f *testing.F) {
	f.Add(readHexFile(f, "testdata/record_v4.hex"))
	f.Add(readHexFile(f, "testdata/record_v6.hex"))
	f.Add(AppendBlank(nil, 64))
	r4, r6 := sampleRecord(), sampleRecordV6()
	two := r6.AppendTo(r4.AppendTo(nil))
	f.Add(two)
	f.Add(two[:50])
	f.Fuzz(func(t *testing.T, b []byte) {
		r, n, err := Decode(b)
		// Decode may additionally reject ports, never accept more than ParseLayout.
		if _, lerr := ParseLayout(b); err == nil && lerr != nil {
			t.Fatalf("Decode ok but ParseLayout: %v", lerr)
		}
		if err != nil {
			if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrBlank) {
				t.Fatalf("unexpected error class: %v", err)
			}
			return
		}
		if n < MinRecordSize || n > len(b) || int(PeekTotalSize(b)) != n {
			t.Fatalf("size %d out of bounds (len %d)", n, len(b))
		}
		if PeekQueueOffset(b) != r.QueueOffset || PeekStoreTimestamp(b) != r.StoreTimestamp {
			t.Fatal("Peek disagrees with Decode")
		}
		topic, err := PeekTopic(b)
		if err != nil || topic != r.Topic {
			t.Fatalf("PeekTopic = %q, %v", topic, err)
		}
		canonical := PeekMagic(b) == MagicV1 && r.Topic != "" && VerifyBodyCRC(b) == nil &&
			!r.BornHost.Addr().Is4In6() && !r.StoreHost.Addr().Is4In6()
		if canonical {
			if enc := r.AppendTo(nil); !bytes.Equal(enc, b[:n]) {
				t.Fatalf("re-encoding differs\n got %x\nwant %x", enc, b[:n])
			}
		}
	})
}

// FuzzDecodeProperties checks DecodeProperties, LookupProperty and
// EncodeProperties against each other and against the Go client's parser.
func FuzzDecodeProperties(f *testing.F) {
	f.Add(sampleRecord().Properties)
	f.Add([]byte("A\x011\x02A\x012"))
	f.Add([]byte("\x01\x02\x01x\x02k\x01v\x01w\x02"))
	f.Add([]byte(""))
	f.Add([]byte("TAGS\x01标签\x02"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m := DecodeProperties(b)
		for k, v := range m {
			if lv, ok := LookupProperty(b, k); !ok || lv != v {
				t.Fatalf("LookupProperty(%q) = %q, %v; map has %q", k, lv, ok, v)
			}
		}
		var cm primitive.Message
		cm.UnmarshalProperties(b)
		cp := cm.GetProperties()
		delete(cp, "") // we skip empty keys, the Go client keeps them
		if !maps.Equal(m, cp) {
			t.Fatalf("DecodeProperties = %q, Go client %q", m, cp)
		}
		nonEmpty := maps.Clone(m)
		maps.DeleteFunc(nonEmpty, func(_, v string) bool { return v == "" })
		if again := DecodeProperties(EncodeProperties(m)); !maps.Equal(again, nonEmpty) {
			t.Fatalf("round trip = %q, want %q", again, nonEmpty)
		}
	})
}

// FuzzDecodeBatch checks DecodeBatch never panics and that an accepted body
// re-encodes to the same bytes once MAGICCODE and BODYCRC are zeroed.
func FuzzDecodeBatch(f *testing.F) {
	enc, _ := EncodeBatch(sampleBatch())
	f.Add(enc)
	m := primitive.NewMessage("T", []byte("body"))
	m.WithTag("x")
	f.Add(producer.MarshalMessageBatch(m, primitive.NewMessage("T", nil)))
	f.Add(enc[:30])
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := DecodeBatch(b)
		if err != nil {
			if !errors.Is(err, ErrBadBatch) {
				t.Fatalf("unexpected error class: %v", err)
			}
			return
		}
		again, err := EncodeBatch(entries)
		if err != nil {
			t.Fatal(err)
		}
		want := bytes.Clone(b)
		for pos := 0; pos < len(want); {
			size := int(PeekTotalSize(want[pos:]))
			clear(want[pos+4 : pos+12])
			pos += size
		}
		if !bytes.Equal(again, want) {
			t.Fatalf("re-encoding differs\n got %x\nwant %x", again, want)
		}
	})
}
