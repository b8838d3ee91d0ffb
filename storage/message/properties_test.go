package message

import (
	"maps"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

func TestEncodeProperties(t *testing.T) {
	tests := []struct {
		name string
		in   map[string]string
		want string
	}{
		{"nil", nil, ""},
		{"one", map[string]string{"TAGS": "TagA"}, "TAGS\x01TagA\x02"},
		{"sorted", map[string]string{"WAIT": "true", "KEYS": "k1 k2", "TAGS": "t"}, "KEYS\x01k1 k2\x02TAGS\x01t\x02WAIT\x01true\x02"},
		{"drops empty key and value", map[string]string{"": "v", "K": "", "A": "1"}, "A\x011\x02"},
		{"drops separators", map[string]string{"A\x01": "v", "B": "x\x02y", "C": "ok"}, "C\x01ok\x02"},
		{"utf8", map[string]string{"TAGS": "标签"}, "TAGS\x01标签\x02"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(EncodeProperties(tt.in)); got != tt.want {
				t.Fatalf("EncodeProperties = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDecodeProperties(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]string
	}{
		{"empty", "", map[string]string{}},
		{"trailing separator", "A\x011\x02B\x012\x02", map[string]string{"A": "1", "B": "2"}},
		{"no trailing separator", "A\x011\x02B\x012", map[string]string{"A": "1", "B": "2"}},
		{"empty value kept like the Go client", "A\x01\x02", map[string]string{"A": ""}},
		{"empty key skipped", "\x01v\x02A\x011\x02", map[string]string{"A": "1"}},
		{"no name separator skipped", "junk\x02A\x011\x02", map[string]string{"A": "1"}},
		{"two name separators skipped", "A\x011\x012\x02B\x012\x02", map[string]string{"B": "2"}},
		{"duplicate: last wins", "A\x011\x02A\x012\x02", map[string]string{"A": "2"}},
		{"empty items", "\x02\x02A\x011\x02\x02", map[string]string{"A": "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DecodeProperties([]byte(tt.in))
			if !maps.Equal(got, tt.want) {
				t.Fatalf("DecodeProperties = %q, want %q", got, tt.want)
			}
			for k, v := range tt.want {
				if lv, ok := LookupProperty([]byte(tt.in), k); !ok || lv != v {
					t.Errorf("LookupProperty(%q) = %q, %v; want %q", k, lv, ok, v)
				}
			}
			if _, ok := LookupProperty([]byte(tt.in), "MISSING"); ok {
				t.Error("LookupProperty found a missing key")
			}
		})
	}
}

func TestAppendProperty(t *testing.T) {
	tests := []struct {
		name, in, k, v, want string
	}{
		{"to empty", "", "CLUSTER", "c1", "CLUSTER\x01c1\x02"},
		{"after trailing separator", "A\x011\x02", "B", "2", "A\x011\x02B\x012\x02"},
		{"adds missing separator", "A\x011", "B", "2", "A\x011\x02B\x012\x02"},
		{"invalid pair ignored", "A\x011\x02", "", "2", "A\x011\x02"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(AppendProperty([]byte(tt.in), tt.k, tt.v)); got != tt.want {
				t.Fatalf("AppendProperty = %q, want %q", got, tt.want)
			}
		})
	}
	// Overriding an existing key: the new value wins for us and the Go client.
	props := AppendProperty(EncodeProperties(map[string]string{PropUniqKey: "old"}), PropUniqKey, "new")
	if v, _ := LookupProperty(props, PropUniqKey); v != "new" {
		t.Fatalf("LookupProperty after override = %q", v)
	}
	var m primitive.Message
	m.UnmarshalProperties(props)
	if v := m.GetProperty(PropUniqKey); v != "new" {
		t.Fatalf("Go client sees %q after override", v)
	}
}

// TestPropertiesMatchGoClient checks both directions against the Go client.
func TestPropertiesMatchGoClient(t *testing.T) {
	in := map[string]string{
		PropTags: "TagA", PropKeys: "a b", PropUniqKey: "7F000001000000000000000000000001",
		PropTimerDeliverMS: "1700000000000", PropWait: "true", "user-prop": "ü",
	}
	var m primitive.Message
	m.UnmarshalProperties(EncodeProperties(in))
	if got := m.GetProperties(); !maps.Equal(got, in) {
		t.Fatalf("client decoded %v, want %v", got, in)
	}
	msg := primitive.NewMessage("T", []byte("b"))
	for k, v := range in {
		msg.WithProperty(k, v)
	}
	if got := DecodeProperties([]byte(msg.MarshallProperties())); !maps.Equal(got, in) {
		t.Fatalf("decoded client encoding %v, want %v", got, in)
	}
}

func BenchmarkLookupProperty(b *testing.B) {
	props := sampleRecord().Properties
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := LookupProperty(props, PropTags); !ok {
			b.Fatal("missing")
		}
	}
}

func TestLookupPropertyBytesDoesNotAllocate(t *testing.T) {
	props := EncodeProperties(map[string]string{"TAGS": "TagA", "KEYS": "k1 k2", "a": "10", "UNIQ_KEY": "ABC"})
	for _, k := range []string{"TAGS", "a", "UNIQ_KEY", "missing", "A"} {
		want, wantOK := LookupProperty(props, k)
		got, ok := LookupPropertyBytes(props, k)
		if ok != wantOK || string(got) != want {
			t.Errorf("LookupPropertyBytes(%q) = %q, %v; want %q, %v", k, got, ok, want, wantOK)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = LookupPropertyBytes(props, "UNIQ_KEY") }); n != 0 {
		t.Errorf("LookupPropertyBytes allocates %v times per call", n)
	}
}
