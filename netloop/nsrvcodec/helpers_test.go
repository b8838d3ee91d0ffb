package nsrvcodec

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/netloop/remoting"
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
func master(name, addr string) namesrv.BrokerInfo {
	return namesrv.BrokerInfo{Cluster: "DefaultCluster", BrokerName: name, BrokerAddr: addr, HAServerAddr: addr + "0"}
}

// slave returns a BrokerInfo for broker id of name at addr.
func slave(name, addr string, id int64) namesrv.BrokerInfo {
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

// mustRegister registers through the wire path (NewRegisterRequest + Handle)
// and fails the test unless the answer is SUCCESS.
func mustRegister(t testing.TB, r *namesrv.Registry, info namesrv.BrokerInfo, now time.Time, tcs ...meta.TopicConfig) *remoting.Command {
	t.Helper()
	req, err := NewRegisterRequest(info, topics(tcs...), namesrv.DataVersion{Timestamp: now.UnixMilli(), Counter: 1})
	if err != nil {
		t.Fatal(err)
	}
	resp := handle(r, req, now)
	if resp.Code != remoting.Success {
		t.Fatalf("register %+v: code %d remark %q", info, resp.Code, resp.Remark)
	}
	return resp
}

// routeReq builds a GET_ROUTEINFO_BY_TOPIC request as the Go client does.
func routeReq(topic string) *remoting.Command {
	return &remoting.Command{Code: remoting.GetRouteInfoByTopic, Language: "GO", Version: 317, Opaque: 7,
		ExtFields: map[string]string{"topic": topic}}
}

// registerCmd is a hand-built REGISTER_BROKER with the given fields and body.
func registerCmd(fields map[string]string, body []byte) *remoting.Command {
	ext := map[string]string{
		"clusterName": "DefaultCluster", "brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911",
		"brokerId": "0", "haServerAddr": "127.0.0.1:10912",
	}
	for k, v := range fields {
		if v == "<absent>" {
			delete(ext, k)
			continue
		}
		ext[k] = v
	}
	if _, ok := fields["bodyCrc32"]; !ok && len(body) > 0 {
		ext["bodyCrc32"] = strconv.FormatInt(namesrv.BodyCRC32(body), 10)
	}
	return &remoting.Command{Code: remoting.RegisterBroker, Language: "JAVA", Version: remoting.BrokerVersion,
		Opaque: 42, ExtFields: ext, Body: body}
}

// handle serves cmd on r at now through the codec (Handle over an unknown
// connection).
func handle(r *namesrv.Registry, cmd *remoting.Command, now time.Time) *remoting.Command {
	return Handle(r, cmd, now, 0)
}
