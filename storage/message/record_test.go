package message

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

func TestRecordRoundTrip(t *testing.T) {
	v4 := sampleRecord()
	v6 := sampleRecordV6()
	bornV6 := sampleRecord()
	bornV6.BornHost = v6.BornHost
	storeV6 := sampleRecord()
	storeV6.StoreHost = v6.StoreHost
	empty := sampleRecord()
	empty.Body, empty.Properties = nil, nil
	maxTopic := sampleRecord()
	maxTopic.Topic = strings.Repeat("t", MaxTopicLenV1)
	maxProps := sampleRecord()
	maxProps.Properties = bytes.Repeat([]byte{'p'}, MaxPropertiesLen)
	flags := sampleRecord()
	flags.SysFlag = SysFlagCompressed | SysFlagTransactionPrepared | SysFlagCompressionZLIB
	negative := sampleRecord()
	negative.QueueID, negative.Flag, negative.ReconsumeTimes = -1, -2, -3
	negative.PreparedTransactionOffset = -4

	tests := []struct {
		name        string
		rec         Record
		size        int
		wantSysFlag int32
	}{
		{"ipv4", v4, 91 + len(v4.Body) + len(v4.Topic) + len(v4.Properties), 0},
		{"ipv6 both", v6, 91 + 24 + len(v6.Body) + len(v6.Topic) + len(v6.Properties), SysFlagBornHostV6 | SysFlagStoreHostV6},
		{"ipv6 born", bornV6, 91 + 12 + len(v4.Body) + len(v4.Topic) + len(v4.Properties), SysFlagBornHostV6},
		{"ipv6 store", storeV6, 91 + 12 + len(v4.Body) + len(v4.Topic) + len(v4.Properties), SysFlagStoreHostV6},
		{"empty body and properties", empty, 91 + len(empty.Topic), 0},
		{"max topic", maxTopic, 91 + len(v4.Body) + MaxTopicLenV1 + len(v4.Properties), 0},
		{"max properties", maxProps, 91 + len(v4.Body) + len(v4.Topic) + MaxPropertiesLen, 0},
		{"sysflag bits kept", flags, 91 + len(v4.Body) + len(v4.Topic) + len(v4.Properties), flags.SysFlag},
		{"negative fields", negative, 91 + len(v4.Body) + len(v4.Topic) + len(v4.Properties), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.rec.EncodedSize(); got != tt.size {
				t.Fatalf("EncodedSize = %d, want %d", got, tt.size)
			}
			prefix := []byte("prefix")
			b := tt.rec.AppendTo(bytes.Clone(prefix))
			if !bytes.HasPrefix(b, prefix) || len(b)-len(prefix) != tt.size {
				t.Fatalf("AppendTo wrote %d bytes after the prefix, want %d", len(b)-len(prefix), tt.size)
			}
			enc := b[len(prefix):]
			got, n, err := Decode(enc)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if n != tt.size {
				t.Fatalf("Decode size = %d, want %d", n, tt.size)
			}
			want := tt.rec
			want.SysFlag = tt.wantSysFlag
			normalize(&want)
			normalize(&got)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Decode mismatch\n got %+v\nwant %+v", got, want)
			}
			if err := VerifyBodyCRC(enc); err != nil {
				t.Fatalf("VerifyBodyCRC: %v", err)
			}
		})
	}
}

// normalize maps nil and empty slices to nil so DeepEqual compares content.
func normalize(r *Record) {
	if len(r.Body) == 0 {
		r.Body = nil
	}
	if len(r.Properties) == 0 {
		r.Properties = nil
	}
}

func TestRecordHostNormalization(t *testing.T) {
	r := sampleRecord()
	r.BornHost = netip.MustParseAddrPort("[::ffff:192.168.1.2]:80")
	r.StoreHost = netip.AddrPort{}
	got, _, err := Decode(r.AppendTo(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got.BornHost != netip.MustParseAddrPort("192.168.1.2:80") {
		t.Errorf("4in6 born host decoded as %v", got.BornHost)
	}
	if got.StoreHost != netip.MustParseAddrPort("0.0.0.0:0") {
		t.Errorf("zero store host decoded as %v", got.StoreHost)
	}
	if got.SysFlag&(SysFlagBornHostV6|SysFlagStoreHostV6) != 0 {
		t.Errorf("IPv6 bits set for IPv4 hosts: %#x", got.SysFlag)
	}
	// IPv6 bits given for IPv4 hosts are cleared.
	r = sampleRecord()
	r.SysFlag = SysFlagBornHostV6 | SysFlagStoreHostV6
	if _, _, err := Decode(r.AppendTo(nil)); err != nil {
		t.Fatalf("stale IPv6 bits not cleared: %v", err)
	}
}

func TestRecordValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Record)
		ok     bool
	}{
		{"valid", func(*Record) {}, true},
		{"empty topic", func(r *Record) { r.Topic = "" }, false},
		{"topic 127", func(r *Record) { r.Topic = strings.Repeat("a", 127) }, true},
		{"topic 128", func(r *Record) { r.Topic = strings.Repeat("a", 128) }, false},
		{"properties 32768", func(r *Record) { r.Properties = make([]byte, 32768) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := sampleRecord()
			tt.mutate(&r)
			err := r.Validate()
			if (err == nil) != tt.ok {
				t.Fatalf("Validate = %v, want ok=%v", err, tt.ok)
			}
			_, encErr := r.Encode(nil)
			if (encErr == nil) != tt.ok {
				t.Fatalf("Encode = %v, want ok=%v", encErr, tt.ok)
			}
			if !tt.ok {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("error %v is not ErrInvalid", err)
				}
				defer func() {
					if recover() == nil {
						t.Fatal("AppendTo did not panic on an invalid record")
					}
				}()
				r.AppendTo(nil)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	be := binary.BigEndian
	good := func() []byte { r := sampleRecord(); return r.AppendTo(nil) }
	l, err := ParseLayout(good())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		in   func() []byte
		want error
	}{
		{"empty", func() []byte { return nil }, ErrTruncated},
		{"short header", func() []byte { return good()[:7] }, ErrTruncated},
		{"short record", func() []byte { b := good(); return b[:len(b)-1] }, ErrTruncated},
		{"bad magic", func() []byte { b := good(); be.PutUint32(b[OffMagic:], 0xDEADBEEF); return b }, ErrCorrupt},
		{"size below minimum", func() []byte { b := good(); be.PutUint32(b, 90); return b }, ErrCorrupt},
		{"negative size", func() []byte { b := good(); be.PutUint32(b, 0x80000000); return b }, ErrCorrupt},
		{"size larger than fields", func() []byte {
			b := append(good(), 0)
			be.PutUint32(b, uint32(len(b)))
			return b
		}, ErrCorrupt},
		{"size smaller than fields", func() []byte { b := good(); be.PutUint32(b, uint32(len(b)-1)); return b }, ErrCorrupt},
		{"body length too big", func() []byte { b := good(); be.PutUint32(b[l.BodyOff-4:], 1<<30); return b }, ErrCorrupt},
		{"body length negative", func() []byte { b := good(); be.PutUint32(b[l.BodyOff-4:], 0xFFFFFFFF); return b }, ErrCorrupt},
		{"topic length too big", func() []byte { b := good(); b[l.TopicOff-1] = 0xFF; return b }, ErrCorrupt},
		{"properties length negative", func() []byte { b := good(); be.PutUint16(b[l.PropsOff-2:], 0x8000); return b }, ErrCorrupt},
		{"ipv6 flag on ipv4 record", func() []byte {
			b := good()
			be.PutUint32(b[OffSysFlag:], uint32(SysFlagBornHostV6))
			return b
		}, ErrCorrupt},
		{"port out of range", func() []byte { b := good(); be.PutUint32(b[OffBornHost+4:], 70000); return b }, ErrCorrupt},
		{"blank", func() []byte { return AppendBlank(nil, 100) }, ErrBlank},
		{"blank too small", func() []byte { b := AppendBlank(nil, 8); be.PutUint32(b, 4); return b }, ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Decode(tt.in())
			if !errors.Is(err, tt.want) {
				t.Fatalf("Decode error = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestDecodeBlankSize(t *testing.T) {
	b := AppendBlank(nil, 1<<20) // header only: size may exceed the input
	if len(b) != BlankSize {
		t.Fatalf("AppendBlank wrote %d bytes", len(b))
	}
	_, n, err := Decode(b)
	if !errors.Is(err, ErrBlank) || n != 1<<20 {
		t.Fatalf("Decode blank = %d, %v; want %d, ErrBlank", n, err, 1<<20)
	}
}

func TestDecodeV2(t *testing.T) {
	// Build a V2 record by hand from a V1 one: 2-byte topic length.
	r := sampleRecord()
	r.Topic = "%RETRY%" + strings.Repeat("g", 200) // too long for V1
	v1 := r
	v1.Topic = "x"
	b := v1.AppendTo(nil)
	l, err := ParseLayout(b)
	if err != nil {
		t.Fatal(err)
	}
	var v2 []byte
	v2 = append(v2, b[:l.TopicOff-1]...)
	v2 = binary.BigEndian.AppendUint16(v2, uint16(len(r.Topic)))
	v2 = append(v2, r.Topic...)
	v2 = append(v2, b[l.PropsOff-2:]...)
	binary.BigEndian.PutUint32(v2, uint32(len(v2)))
	binary.BigEndian.PutUint32(v2[OffMagic:], MagicV2)
	got, n, err := Decode(v2)
	if err != nil {
		t.Fatalf("Decode V2: %v", err)
	}
	if n != len(v2) || got.Topic != r.Topic || !bytes.Equal(got.Properties, r.Properties) {
		t.Fatalf("V2 decoded as n=%d topic=%q props=%q", n, got.Topic, got.Properties)
	}
	if topic, err := PeekTopic(v2); err != nil || topic != r.Topic {
		t.Fatalf("PeekTopic V2 = %q, %v", topic, err)
	}
}

func TestDecodeConsecutive(t *testing.T) {
	var buf []byte
	var want []Record
	for i := range 5 {
		r := sampleRecord()
		if i%2 == 1 {
			r = sampleRecordV6()
		}
		r.QueueOffset = int64(i)
		r.PhysicalOffset = int64(len(buf))
		r.Body = bytes.Repeat([]byte{byte('a' + i)}, i*10)
		want = append(want, r)
		buf = r.AppendTo(buf)
	}
	buf = AppendBlank(buf, 64)
	for i := 0; ; i++ {
		r, n, err := Decode(buf)
		if errors.Is(err, ErrBlank) {
			if i != len(want) || n != 64 {
				t.Fatalf("blank after %d records, size %d", i, n)
			}
			return
		}
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if r.QueueOffset != int64(i) || !bytes.Equal(r.Body, want[i].Body) || r.BornHost != want[i].BornHost {
			t.Fatalf("record %d mismatch: %+v", i, r)
		}
		buf = buf[n:]
	}
}

func TestBodyAliasesInput(t *testing.T) {
	r := sampleRecord()
	b := r.AppendTo(nil)
	got, _, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	l, _ := ParseLayout(b)
	b[l.BodyOff] = 'J'
	if got.Body[0] != 'J' {
		t.Fatal("Body does not alias the input")
	}
	// The aliases have capped capacity: appending must not overwrite b.
	_ = append(got.Body, 'X')
	if b[l.BodyOff+l.BodyLen] != byte(len(r.Topic)) {
		t.Fatal("append to Body overwrote the topic length")
	}
}

func TestVerifyBodyCRC(t *testing.T) {
	r := sampleRecord()
	b := r.AppendTo(nil)
	if got, want := PeekBodyCRC(b), BodyCRC(r.Body); got != want || got < 0 {
		t.Fatalf("BODYCRC = %d, want %d (non-negative)", got, want)
	}
	l, _ := ParseLayout(b)
	for i := l.BodyOff; i < l.BodyOff+l.BodyLen; i++ {
		for bit := range 8 {
			c := bytes.Clone(b)
			c[i] ^= 1 << bit
			if err := VerifyBodyCRC(c); !errors.Is(err, ErrBodyCRC) || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("flip byte %d bit %d: VerifyBodyCRC = %v", i, bit, err)
			}
		}
	}
	if err := VerifyBodyCRC(b[:20]); !errors.Is(err, ErrTruncated) {
		t.Fatalf("truncated: %v", err)
	}
}

func TestPeekAndSet(t *testing.T) {
	for _, r := range []Record{sampleRecord(), sampleRecordV6()} {
		b := r.AppendTo(nil)
		checks := []struct {
			name      string
			got, want int64
		}{
			{"TotalSize", int64(PeekTotalSize(b)), int64(len(b))},
			{"Magic", int64(PeekMagic(b)), int64(MagicV1)},
			{"QueueID", int64(PeekQueueID(b)), int64(r.QueueID)},
			{"Flag", int64(PeekFlag(b)), int64(r.Flag)},
			{"QueueOffset", PeekQueueOffset(b), r.QueueOffset},
			{"PhysicalOffset", PeekPhysicalOffset(b), r.PhysicalOffset},
			{"BornTimestamp", PeekBornTimestamp(b), r.BornTimestamp},
			{"StoreTimestamp", PeekStoreTimestamp(b), r.StoreTimestamp},
		}
		for _, c := range checks {
			if c.got != c.want {
				t.Errorf("Peek%s = %d, want %d", c.name, c.got, c.want)
			}
		}
		if topic, err := PeekTopic(b); err != nil || topic != r.Topic {
			t.Errorf("PeekTopic = %q, %v", topic, err)
		}
		if body, err := PeekBody(b); err != nil || !bytes.Equal(body, r.Body) {
			t.Errorf("PeekBody = %q, %v", body, err)
		}
		if props, err := PeekProperties(b); err != nil || !bytes.Equal(props, r.Properties) {
			t.Errorf("PeekProperties = %q, %v", props, err)
		}
		SetQueueOffset(b, 99)
		SetPhysicalOffset(b, 1234567)
		SetStoreTimestamp(b, 1800000000000)
		got, _, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if got.QueueOffset != 99 || got.PhysicalOffset != 1234567 || got.StoreTimestamp != 1800000000000 ||
			got.BornTimestamp != r.BornTimestamp || got.StoreHost != r.StoreHost {
			t.Errorf("after Set*: %+v", got)
		}
	}
	if _, err := PeekTopic([]byte{1, 2}); !errors.Is(err, ErrTruncated) {
		t.Errorf("PeekTopic short input: %v", err)
	}
}

func TestTransactionType(t *testing.T) {
	if got := TransactionType(SysFlagCompressed | SysFlagTransactionCommit | SysFlagStoreHostV6); got != SysFlagTransactionCommit {
		t.Fatalf("TransactionType = %#x", got)
	}
}

func BenchmarkAppendTo(b *testing.B) {
	r := sampleRecord()
	buf := make([]byte, 0, r.EncodedSize())
	b.ReportAllocs()
	for b.Loop() {
		buf = r.AppendTo(buf[:0])
	}
}

func BenchmarkDecode(b *testing.B) {
	r := sampleRecord()
	enc := r.AppendTo(nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Decode(enc); err != nil {
			b.Fatal(err)
		}
	}
}
