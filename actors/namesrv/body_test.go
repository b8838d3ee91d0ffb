package namesrv

import (
	"encoding/hex"
	"errors"
	"hash/crc32"
	"reflect"
	"strings"
	"testing"

	"github.com/wheelmq/wheelmq/actors/namesrv/namesrvtest"

	"github.com/wheelmq/wheelmq/storage/meta"
)

const dvJSON = `{"counter":5,"stateVersion":0,"timestamp":1700000000000}`

func TestDecodeCompressedBody(t *testing.T) {
	tbw := meta.TopicConfig{TopicName: "TBW102", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 7, TopicFilterType: "SINGLE_TAG"}
	orders := meta.TopicConfig{TopicName: "orders", ReadQueueNums: 4, WriteQueueNums: 2, Perm: 6, TopicFilterType: "MULTI_TAG"}
	tests := []struct {
		name    string
		raw     []byte // inflated layout; deflated by the test
		body    []byte // used as is when raw is nil
		want    map[string]meta.TopicConfig
		wantErr string
	}{
		{name: "java 5 with attributes and mapping section",
			raw:  namesrvtest.InflatedLayout(dvJSON, []string{"TBW102 8 8 7 SINGLE_TAG {}", `orders 4 2 6 MULTI_TAG {"a":"b c"}`}, `[]`, []string{`{"topic":"x"}`}),
			want: map[string]meta.TopicConfig{"TBW102": tbw, "orders": orders}},
		{name: "pre-5.0 five fields no mapping section",
			raw:  namesrvtest.InflatedLayout(dvJSON, []string{"TBW102 8 8 7 SINGLE_TAG"}, `[]`, nil),
			want: map[string]meta.TopicConfig{"TBW102": tbw}},
		{name: "json topic config",
			raw:  namesrvtest.InflatedLayout(dvJSON, []string{`{"topicName":"orders","readQueueNums":4,"writeQueueNums":2,"perm":6,"topicFilterType":"MULTI_TAG"}`}, `[]`, []string{}),
			want: map[string]meta.TopicConfig{"orders": orders}},
		{name: "no topics", raw: namesrvtest.InflatedLayout(dvJSON, nil, `["f:1"]`, []string{}),
			want: map[string]meta.TopicConfig{}},
		{name: "four fields", raw: namesrvtest.InflatedLayout(dvJSON, []string{"T 1 1 6"}, `[]`, nil), wantErr: "want 5 fields"},
		{name: "bad number", raw: namesrvtest.InflatedLayout(dvJSON, []string{"T 1 x 6 SINGLE_TAG"}, `[]`, nil), wantErr: "field 3"},
		{name: "bad filter type", raw: namesrvtest.InflatedLayout(dvJSON, []string{"T 1 1 6 ALL"}, `[]`, nil), wantErr: "filter type"},
		{name: "bad data version", raw: namesrvtest.InflatedLayout(`{"counter":"x"}`, nil, `[]`, nil), wantErr: "dataVersion"},
		{name: "truncated in topics", raw: namesrvtest.InflatedLayout(dvJSON, []string{"T 1 1 6 SINGLE_TAG"}, `[]`, nil)[:80],
			wantErr: "truncated"},
		{name: "negative topic count", raw: append(namesrvtest.InflatedLayout(dvJSON, nil, "", nil)[:4+len(dvJSON)], 0xff, 0xff, 0xff, 0xff),
			wantErr: "topic count -1"},
		{name: "huge length is cheap", raw: append(namesrvtest.InflatedLayout(dvJSON, nil, "", nil)[:4+len(dvJSON)], 0, 0, 0, 1, 0x7f, 0xff, 0xff, 0xff),
			wantErr: "truncated"},
		{name: "empty stream", raw: []byte{}, wantErr: "truncated in dataVersion"},
		{name: "not zlib", body: []byte("plain"), wantErr: "compressed body"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := tc.body
			if tc.raw != nil {
				body = namesrvtest.Deflate(t, tc.raw)
			}
			got, dv, err := decodeRegisterBody(body, true)
			if tc.wantErr != "" {
				if err == nil || !errors.Is(err, ErrBadBody) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want ErrBadBody containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if dv != (DataVersion{Timestamp: 1700000000000, Counter: 5}) {
				t.Errorf("dv %+v", dv)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("topics %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestDecodeCompressedBodyCap checks the deflate-bomb cap: a section that
// inflates past the limit is refused, one that fits is read.
func TestDecodeCompressedBodyCap(t *testing.T) {
	raw := namesrvtest.InflatedLayout(dvJSON, []string{"T 1 1 6 SINGLE_TAG " + strings.Repeat("x", 4096)}, `[]`, []string{})
	body := namesrvtest.Deflate(t, raw)
	if _, _, err := decodeCompressedBody(body, int64(len(raw))); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	_, _, err := decodeCompressedBody(body, 1024)
	if !errors.Is(err, ErrBadBody) || !strings.Contains(err.Error(), "inflates beyond 1024 bytes") {
		t.Fatalf("err %v", err)
	}
}

// TestInflatedLayoutGolden pins the byte layout documented in the package
// doc (and docs/namesrv.md) as a hex dump.
func TestInflatedLayoutGolden(t *testing.T) {
	raw := namesrvtest.InflatedLayout(`{"counter":1,"stateVersion":0,"timestamp":0}`,
		[]string{"T 4 4 6 SINGLE_TAG"}, `[]`, []string{})
	golden(t, "register_body_inflated.hexdump", []byte(hex.Dump(raw)))
	tcs, _, err := decodeRegisterBody(namesrvtest.Deflate(t, raw), true)
	if err != nil || tcs["T"].WriteQueueNums != 4 {
		t.Fatalf("decode %+v %v", tcs, err)
	}
}

func TestCheckBodyCRC(t *testing.T) {
	body := []byte("hello, name server")
	sum := crc32.ChecksumIEEE(body)
	tests := []struct {
		name string
		want int64
		ok   bool
	}{
		{"absent", 0, true},
		{"java masked", int64(sum & 0x7fffffff), true},
		{"unsigned", int64(sum), true},
		{"signed", int64(int32(sum)), true},
		{"off by one", int64(sum&0x7fffffff) + 1, false},
	}
	for _, tc := range tests {
		err := checkBodyCRC(body, tc.want)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrChecksum)) {
			t.Errorf("%s: err %v", tc.name, err)
		}
	}
}

func TestDecodeJSONBody(t *testing.T) {
	tcs, dv, err := decodeRegisterBody(readTestdata(t, "register_body_java.json"), false)
	if err != nil {
		t.Fatal(err)
	}
	want := meta.TopicConfig{TopicName: "orders", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG"}
	if len(tcs) != 3 || !tcs["orders"].Equal(want) || dv.Counter != 3 {
		t.Errorf("topics %+v dv %+v", tcs, dv)
	}
	for _, body := range []string{`null`, `{}`, `{"topicConfigSerializeWrapper":{}}`} {
		tcs, _, err := decodeRegisterBody([]byte(body), false)
		if err != nil || tcs == nil || len(tcs) != 0 {
			t.Errorf("%s: %v %v", body, tcs, err)
		}
	}
}

// TestDecodeJSONBodyForms reads register bodies as brokers write them and
// as fastjson would accept them (testdata/register_body_*.json).
func TestDecodeJSONBodyForms(t *testing.T) {
	tests := []struct {
		file   string
		about  string
		want   map[string]meta.TopicConfig
		wantDV DataVersion
	}{
		{
			file:  "register_body_java.json",
			about: "Java 5 broker (fastjson, sorted fields, attributes, readable/writeable, mapping maps)",
			want: map[string]meta.TopicConfig{
				"TBW102":         {TopicName: "TBW102", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 7, TopicFilterType: "SINGLE_TAG"},
				"orders":         {TopicName: "orders", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG"},
				"%RETRY%group-1": {TopicName: "%RETRY%group-1", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6, TopicFilterType: "SINGLE_TAG"},
			},
			wantDV: DataVersion{Timestamp: 1700000000000, Counter: 3},
		},
		{
			file:  "register_body_java4.json",
			about: "Java 4.x broker (TopicConfigSerializeWrapper without mapping maps or stateVersion)",
			want: map[string]meta.TopicConfig{
				"TBW102": {TopicName: "TBW102", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 7, TopicFilterType: "SINGLE_TAG"},
				"orders": {TopicName: "orders", ReadQueueNums: 4, WriteQueueNums: 2, Perm: 6, TopicFilterType: "MULTI_TAG", Order: true},
			},
			wantDV: DataVersion{Timestamp: 1600000000000, Counter: 7},
		},
		{
			file: "register_body_lenient.json",
			about: "what fastjson accepts: numbers as strings, a fraction, booleans as strings, an enum ordinal, " +
				"missing topicName and filter type, null and unknown fields",
			want: map[string]meta.TopicConfig{
				"orders": {ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "MULTI_TAG", Order: true},
				"plain":  {TopicName: "plain", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6, TopicFilterType: "SINGLE_TAG"},
			},
			wantDV: DataVersion{Timestamp: 1700000000000, Counter: 9},
		},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			tcs, dv, err := decodeRegisterBody(readTestdata(t, tc.file), false)
			if err != nil {
				t.Fatalf("%s: %v", tc.about, err)
			}
			if !reflect.DeepEqual(tcs, tc.want) || dv != tc.wantDV {
				t.Fatalf("%s:\n got %+v %+v\nwant %+v %+v", tc.about, tcs, dv, tc.want, tc.wantDV)
			}
		})
	}
	for _, bad := range []string{
		`{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"readQueueNums":"four"}}}}`,
		`{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"perm":4294967296}}}}`,
		`{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"order":"maybe"}}}}`,
		`{"topicConfigSerializeWrapper":{"dataVersion":{"counter":[]}}}`,
		`{"topicConfigSerializeWrapper":{"topicConfigTable":[]}}`,
		`{"topicConfigSerializeWrapper":{"topicQueueMappingInfoMap":{0:1}}}`,
	} {
		if _, _, err := decodeRegisterBody([]byte(bad), false); !errors.Is(err, ErrBadBody) {
			t.Errorf("%s: err %v, want ErrBadBody", bad, err)
		}
	}
}
