package process_test

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/storage/ha"
)

// startTLSMember is startMember with every remoting port and the
// replication stream in TLS enforcing mode (the group's secret proven
// inside TLS, bound to the connection) (the name servers with their
// controllers stay plaintext: their connections are not told to use TLS).
func startTLSMember(t *testing.T, namesrv []string) *process.Node {
	t.Helper()
	secret := haSecretFile(t)
	return processtest.Start(t, processtest.Options{Metrics: true, ClientTLS: insecure(), Mutate: func(c *pipeline.Config) {
		c.BrokerName = "broker-a"
		c.Replication, c.HAListen, c.MinInSyncReplicas = pipeline.ReplicationController, "127.0.0.1:0", 1
	}, MutateNode: func(c *process.Config) {
		c.NamesrvListen, c.NamesrvDir = "", ""
		c.Broker.NameServers = namesrv
		c.TLS = process.TLSConfig{Mode: netloop.TLSEnforcing}
		c.HASecretFile = secret
	}})
}

// TestReplicationStreamOverTLS: with --tls-mode enforcing, a replica
// follows its master over TLS (it joins the sync-state set and holds the
// master's CommitLog), and the master's HA port refuses a plaintext peer.
func TestReplicationStreamOverTLS(t *testing.T) {
	t.Parallel() // its own broker or controller; waits more than it computes
	ns := startControllers(t)
	a := startTLSMember(t, ns)
	haWait(t, "first member master", func() bool {
		return strings.Contains(haGet(t, "https://"+a.MetricsAddr()+"/healthz"), "role: master")
	})
	b := startTLSMember(t, ns)
	haWait(t, "second member in the sync-state set", func() bool {
		return strings.Contains(haGet(t, "https://"+a.MetricsAddr()+"/healthz"), "sync_state_set=[1 2]")
	})
	haAddr := b.Broker().Pipeline().Role().Get().MasterHAAddr
	if haAddr == "" {
		t.Fatal("the replica knows no master HA address")
	}
	// The replica's CommitLog grows with the master's: the stream carries data.
	haWait(t, "the replica holds the master's log", func() bool {
		m := a.Broker().Store().CommitLog.MaxOffset()
		return m > 0 && b.Broker().Store().CommitLog.MaxOffset() == m
	})

	// A TLS client completes a handshake with the HA port, but the
	// group's old static token (version 1's handshake, as a fake master
	// collected it) reads the fixed refusal: no epoch, no offset, no log.
	d := net.Dialer{Timeout: 5 * time.Second}
	tc, err := tls.DialWithDialer(&d, "tcp", haAddr, insecure())
	if err != nil {
		t.Fatalf("TLS handshake with the HA port %s: %v", haAddr, err)
	}
	_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := tc.Write(v1Handshake("DefaultCluster/broker-a", 2)); err != nil {
		t.Fatal(err)
	}
	if got, _ := io.ReadAll(tc); !bytes.Equal(got, ha.Refusal()) {
		t.Fatalf("the HA port answered a version-1 handshake with %x, want the fixed refusal", got)
	}
	tc.Close()
	// ...and a plaintext peer gets no stream: the server answers its bytes
	// with a TLS alert at most, then closes.
	c, err := d.Dial("tcp", haAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("WHEELMQ-HA plaintext handshake\n")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf, err := io.ReadAll(c)
	var nerr net.Error
	if errors.As(err, &nerr) && nerr.Timeout() {
		t.Fatalf("the HA port kept a plaintext connection open (read %d bytes)", len(buf))
	}
	if len(buf) > 0 && buf[0] != 0x15 { // 0x15: a TLS alert record
		t.Fatalf("the HA port answered plaintext with %q, want nothing or a TLS alert", buf)
	}
}

// v1Handshake is a version-1 handshake frame with its static token.
func v1Handshake(token string, replicaID int64) []byte {
	p := []byte{byte(ha.TypeHandshake)}
	p = binary.BigEndian.AppendUint32(p, ha.Magic)
	p = binary.BigEndian.AppendUint16(p, 1)
	p = binary.BigEndian.AppendUint16(p, uint16(len(token)))
	p = append(p, token...)
	p = binary.BigEndian.AppendUint64(p, uint64(replicaID))
	p = append(p, make([]byte, 8+8+4)...) // epoch, max offset, no epochs
	p = binary.BigEndian.AppendUint32(p, crc32.Checksum(p, crc32.MakeTable(crc32.Castagnoli)))
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(p))), p...)
}
