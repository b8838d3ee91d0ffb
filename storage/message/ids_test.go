package message

import (
	"encoding/hex"
	"errors"
	"net/netip"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

func TestOffsetMsgID(t *testing.T) {
	tests := []struct {
		host string
		off  int64
		want string
	}{
		{"10.0.0.1:10911", 1048576, "0A00000100002A9F0000000000100000"},
		{"127.0.0.1:10911", 0, "7F00000100002A9F0000000000000000"},
		{"192.168.255.1:65535", 1<<62 + 15, "C0A8FF010000FFFF400000000000000F"},
		{"[fd00::1]:10911", 1048576, "FD00000000000000000000000000000100002A9F0000000000100000"},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			host := netip.MustParseAddrPort(tt.host)
			got := OffsetMsgID(host, tt.off)
			if got != tt.want {
				t.Fatalf("OffsetMsgID = %s, want %s", got, tt.want)
			}
			// Same as the Go client's own CreateMessageId.
			raw, _ := hex.DecodeString(tt.want[:len(tt.want)-24])
			if c := primitive.CreateMessageId(raw, int32(host.Port()), tt.off); c != got {
				t.Fatalf("client CreateMessageId = %s", c)
			}
			for _, id := range []string{got, strings.ToLower(got)} {
				h, off, err := ParseOffsetMsgID(id)
				if err != nil || h != host || off != tt.off {
					t.Fatalf("ParseOffsetMsgID(%s) = %v, %d, %v", id, h, off, err)
				}
			}
			// The Go client parses it back to the same offset.
			cid, err := primitive.UnmarshalMsgID([]byte(got))
			if err != nil || cid.Offset != tt.off || cid.Port != int(host.Port()) {
				t.Fatalf("client UnmarshalMsgID = %+v, %v", cid, err)
			}
		})
	}
}

func TestParseOffsetMsgIDErrors(t *testing.T) {
	for _, id := range []string{
		"",
		"0A00000100002A9F000000000010000",   // 31 chars
		"0A00000100002A9F00000000001000000", // 33 chars
		"0A00000100002A9F000000000010000G",  // not hex
		"0A00000100012A9F0000000000100000",  // port 0x12A9F > 65535
		"0A00000100002A9F8000000000100000",  // negative offset
	} {
		if _, _, err := ParseOffsetMsgID(id); !errors.Is(err, ErrBadMsgID) {
			t.Errorf("ParseOffsetMsgID(%q) = %v, want ErrBadMsgID", id, err)
		}
	}
}

func TestUniqKeyGenerator(t *testing.T) {
	g := NewUniqKeyGenerator(netip.MustParseAddr("192.168.0.10"), 12345, 0x1E6F1A2B)
	now := time.Date(2023, 11, 14, 22, 13, 20, 123e6, time.UTC)
	steps := []struct {
		at   time.Time
		want string
	}{
		{now, "C0A8000A30391E6F1A2B47B7607B0000"},
		{now, "C0A8000A30391E6F1A2B47B7607B0001"},
		{time.Date(2023, 12, 1, 0, 0, 0, 5e6, time.UTC), "C0A8000A30391E6F1A2B000000050002"}, // new month
		{now, "C0A8000A30391E6F1A2B47B7607B0003"},                                            // clock went back a month
	}
	for i, s := range steps {
		if got := g.NextAt(s.at); got != s.want {
			t.Fatalf("step %d: NextAt = %s, want %s", i, got, s.want)
		}
	}
	// AppendNextAt appends the next key after what dst holds.
	if got := string(g.AppendNextAt([]byte("key="), now)); got != "key=C0A8000A30391E6F1A2B47B7607B0004" {
		t.Fatalf("AppendNextAt = %s", got)
	}
	if n := testing.AllocsPerRun(100, func() { g.AppendNextAt(make([]byte, 0, 64), now) }); n != 0 {
		t.Fatalf("AppendNextAt allocates %v times", n)
	}
}

func TestUniqKeyGeneratorFormat(t *testing.T) {
	upperHex := regexp.MustCompile(`^[0-9A-F]+$`)
	tests := []struct {
		ip   string
		want int
	}{
		{"10.1.2.3", 32},
		{"::ffff:10.1.2.3", 32},
		{"2001:db8::1", 56}, // 16+2+4 + 4+2 bytes
		{"", 32},            // invalid address: zeros
	}
	for _, tt := range tests {
		var ip netip.Addr
		if tt.ip != "" {
			ip = netip.MustParseAddr(tt.ip)
		}
		key := NewUniqKeyGenerator(ip, 99999, -1).Next()
		if len(key) != tt.want || !upperHex.MatchString(key) {
			t.Errorf("ip %q: key %q, want %d upper-hex chars", tt.ip, key, tt.want)
		}
	}
}

func TestUniqKeyGeneratorConcurrentUnique(t *testing.T) {
	g := NewUniqKeyGenerator(netip.MustParseAddr("10.0.0.1"), 1, 2)
	at := time.Date(2024, 2, 10, 0, 0, 0, 0, time.UTC) // fixed time: uniqueness from the counter
	const workers, each = 8, 1000
	var (
		mu   sync.Mutex
		seen = make(map[string]bool, workers*each)
		wg   sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			keys := make([]string, 0, each)
			for range each {
				keys = append(keys, g.NextAt(at))
			}
			mu.Lock()
			defer mu.Unlock()
			for _, k := range keys {
				if seen[k] {
					t.Errorf("duplicate key %s", k)
				}
				seen[k] = true
			}
		})
	}
	wg.Wait()
}
