// Package namesrvtest builds REGISTER_BROKER bodies the way RocketMQ's
// Java broker lays them out, for the name server's tests (the registry's
// in actors/namesrv and the codec's in netloop/nsrvcodec).
package namesrvtest

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"testing"
)

// InflatedLayout builds the inflated bytes of a compressed
// RegisterBrokerBody exactly as Java's RegisterBrokerBody.encode(true) lays
// them out. mappings nil leaves out the mapping section (brokers before
// 5.0).
func InflatedLayout(dvJSON string, topicTexts []string, filterJSON string, mappings []string) []byte {
	var b bytes.Buffer
	putInt := func(n int) { _ = binary.Write(&b, binary.BigEndian, int32(n)) }
	putChunk := func(s string) { putInt(len(s)); b.WriteString(s) }
	putChunk(dvJSON)
	putInt(len(topicTexts))
	for _, s := range topicTexts {
		putChunk(s)
	}
	putChunk(filterJSON)
	if mappings != nil {
		putInt(len(mappings))
		for _, s := range mappings {
			putChunk(s)
		}
	}
	return b.Bytes()
}

// Deflate compresses like Java's DeflaterOutputStream(BEST_COMPRESSION).
func Deflate(t testing.TB, raw []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := zlib.NewWriterLevel(&b, zlib.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// JavaCompressedBody is a Java-5-shaped compressed body with two topics.
func JavaCompressedBody(t testing.TB) []byte {
	return Deflate(t, InflatedLayout(
		`{"counter":5,"stateVersion":0,"timestamp":1700000000000}`,
		[]string{"TBW102 8 8 7 SINGLE_TAG {}", `orders 4 4 6 MULTI_TAG {"+message.type":"NORMAL"}`},
		`[]`, []string{}))
}
