package namesrv

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/storage/meta"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// t0 is the fixed start of every injected clock.
var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden %s: %v (run go test -update)", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("golden %s mismatch:\n got %s\nwant %s", path, got, want)
	}
}

// readTestdata returns the bytes of testdata/name.
func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// master returns a BrokerInfo for broker id 0 of name at addr.
func master(name, addr string) BrokerInfo {
	return BrokerInfo{Cluster: "DefaultCluster", BrokerName: name, BrokerAddr: addr, HAServerAddr: addr + "0"}
}

// slave returns a BrokerInfo for broker id of name at addr.
func slave(name, addr string, id int64) BrokerInfo {
	b := master(name, addr)
	b.BrokerID = id
	return b
}

// topic returns a read-write topic config with n queues.
func topic(name string, n int32) meta.TopicConfig {
	return meta.TopicConfig{TopicName: name, ReadQueueNums: n, WriteQueueNums: n,
		Perm: meta.PermRead | meta.PermWrite, TopicFilterType: "SINGLE_TAG"}
}

// topics builds a topic table.
func topics(tcs ...meta.TopicConfig) map[string]meta.TopicConfig {
	m := make(map[string]meta.TopicConfig, len(tcs))
	for _, tc := range tcs {
		m[tc.TopicName] = tc
	}
	return m
}

// mustRegister registers through the typed call path (EncodeRegisterBody
// + Serve, the body decoded as from the wire) and fails the test unless
// the answer is OK.
func mustRegister(t testing.TB, r *Registry, info BrokerInfo, now time.Time, tcs ...meta.TopicConfig) Answer {
	t.Helper()
	body, err := EncodeRegisterBody(info, topics(tcs...), DataVersion{Timestamp: now.UnixMilli(), Counter: 1})
	if err != nil {
		t.Fatal(err)
	}
	ans := r.Serve(RegisterBroker{Info: info, BodyCRC32: BodyCRC32(body), Body: body}, now, 0)
	if ans.Status != OK {
		t.Fatalf("register %+v: %v %q", info, ans.Status, ans.Remark)
	}
	return ans
}

// hasRoute reports whether r routes topic.
func hasRoute(r *Registry, topic string) bool {
	_, ok := r.Route(topic)
	return ok
}

// twoBrokers registers broker-a (master + slave) with topics T (4 queues)
// and A, and broker-b (master) with T (2 queues) and B.
func twoBrokers(t *testing.T, r *Registry) {
	t.Helper()
	mustRegister(t, r, master("broker-a", "10.0.0.1:10911"), t0, topic("T", 4), topic("A", 1))
	mustRegister(t, r, slave("broker-a", "10.0.0.2:10911", 1), t0, topic("T", 4), topic("A", 1))
	mustRegister(t, r, master("broker-b", "10.0.0.3:10911"), t0, topic("T", 2), topic("B", 8))
}
