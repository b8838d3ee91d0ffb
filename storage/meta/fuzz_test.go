package meta

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzDecodeCheckpoint checks that DecodeCheckpoint never panics and that an
// accepted image is canonical: it re-encodes to the same bytes.
func FuzzDecodeCheckpoint(f *testing.F) {
	good, _ := EncodeCheckpoint(sampleCheckpoint())
	empty, _ := EncodeCheckpoint(Checkpoint{})
	f.Add(good)
	f.Add(empty)
	f.Add(good[:20])
	f.Fuzz(func(t *testing.T, b []byte) {
		// Give the fuzzer valid CRCs half of the time so it reaches the
		// structural checks.
		for _, in := range [][]byte{b, resealed(b)} {
			c, err := DecodeCheckpoint(in)
			if err != nil {
				continue
			}
			again, err := EncodeCheckpoint(c)
			if err != nil {
				t.Fatalf("decoded checkpoint does not encode: %v", err)
			}
			if !bytes.Equal(again, in) {
				t.Fatalf("not canonical\n got %x\nwant %x", again, in)
			}
		}
	})
}

func resealed(b []byte) []byte {
	if len(b) < cpCRCSize {
		return b
	}
	return reseal(b)
}

// FuzzParseTopics checks that parseTopics never panics and that accepted
// content survives a save/load round trip.
func FuzzParseTopics(f *testing.F) {
	for _, name := range []string{"topics.json", "topics_java_style.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"topicConfigTable":{"T":{}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tf, err := parseTopics(b)
		if err != nil {
			return
		}
		data, err := json.Marshal(tf)
		if err != nil {
			t.Fatal(err)
		}
		again, err := parseTopics(data)
		if err != nil || !reflect.DeepEqual(again.TopicConfigTable, tf.TopicConfigTable) || again.DataVersion != tf.DataVersion {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// FuzzParseOffsets checks that parseOffsets never panics and that accepted
// content survives a save/load round trip.
func FuzzParseOffsets(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "consumerOffset.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"offsetTable":{"T@G":{"0":12,"-1":-5}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tab, err := parseOffsets(b)
		if err != nil {
			return
		}
		data, err := json.Marshal(offsetsFile{OffsetTable: tab})
		if err != nil {
			t.Fatal(err)
		}
		again, err := parseOffsets(data)
		if err != nil || !offsetsEqual(again, tab) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// FuzzDecodeSubscriptionGroupConfig checks that the lenient decoder never
// panics and that what it accepts survives an encode/decode round trip.
func FuzzDecodeSubscriptionGroupConfig(f *testing.F) {
	for _, s := range []string{`{"groupName":"G"}`, `{"GroupName":"G","RetryMaxTimes":"3","ConsumeEnable":0}`,
		`{"groupName":"G","attributes":{"a":1},"groupRetryPolicy":{"type":"CUSTOMIZED"},"subscriptionDataSet":[]}`,
		`{"retryQueueNums":2.5,"brokerId":true}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeSubscriptionGroupConfig(b)
		if err != nil {
			return
		}
		enc, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("accepted config does not encode: %v", err)
		}
		again, err := DecodeSubscriptionGroupConfig(enc)
		if err != nil {
			t.Fatalf("own encoding %s rejected: %v", enc, err)
		}
		enc2, _ := json.Marshal(again)
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("round trip differs\n%s\n%s", enc, enc2)
		}
	})
}

// FuzzParseSubscriptionGroups checks that the file parser never panics and
// that accepted content survives an encode/parse round trip (in memory: the
// save path is covered by TestSubscriptionGroupsGolden).
func FuzzParseSubscriptionGroups(f *testing.F) {
	for _, name := range []string{"subscriptionGroup.json", "subscriptionGroup_java.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"subscriptionGroupTable":{"G":{}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		sf, err := parseSubscriptionGroups(b)
		if err != nil {
			return
		}
		enc, err := EncodeSubscriptionGroups(sf.groups, sf.DataVersion, true)
		if err != nil {
			t.Fatalf("encode accepted groups: %v", err)
		}
		back, err := parseSubscriptionGroups(enc)
		if err != nil {
			t.Fatalf("own encoding rejected: %v\n%s", err, enc)
		}
		again, err := EncodeSubscriptionGroups(back.groups, back.DataVersion, true)
		if err != nil || !bytes.Equal(enc, again) {
			t.Fatalf("round trip differs (%v)\n%s\n%s", err, enc, again)
		}
	})
}
