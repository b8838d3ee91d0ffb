package replication

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	mrand "math/rand"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/challenge"
	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/storage/ha"
)

// readAll reads what the HA port at addr answers to out, until it closes
// the connection (a port that keeps it open past 5 s fails the test).
func readAll(t *testing.T, addr string, out []byte) []byte {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(out); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the HA port kept the connection open (read %x)", b)
	}
	return b
}

// v1Handshake is a version-1 handshake frame carrying the static token a
// version-1 broker presented (storage/ha before version 2).
func v1Handshake(token string, replicaID, epoch, maxOffset int64) []byte {
	p := []byte{byte(ha.TypeHandshake)}
	p = binary.BigEndian.AppendUint32(p, ha.Magic)
	p = binary.BigEndian.AppendUint16(p, 1)
	p = binary.BigEndian.AppendUint16(p, uint16(len(token)))
	p = append(p, token...)
	p = binary.BigEndian.AppendUint64(p, uint64(replicaID))
	p = binary.BigEndian.AppendUint64(p, uint64(epoch))
	p = binary.BigEndian.AppendUint64(p, uint64(maxOffset))
	p = binary.BigEndian.AppendUint32(p, 0)
	p = binary.BigEndian.AppendUint32(p, crc32.Checksum(p, crc32.MakeTable(crc32.Castagnoli)))
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(p))), p...)
}

// TestStrangersGetOneFixedRefusal: whatever a stranger sends the master's
// HA port (noise, a version-1 handshake with the group's old static
// token, the challenge with a wrong secret), it reads the same fixed
// refusal, which holds no epoch and no offset, and no byte of the log.
func TestStrangersGetOneFixedRefusal(t *testing.T) {
	// The master starts at epoch 7: a change of epoch while strangers
	// connect would drop their connections (a new master epoch drops
	// every replica connection) before they read the refusal.
	m := newNode(t, masterState(7, 1), nil)
	if err := m.epochs.Append(7, 0); err != nil {
		t.Fatal(err)
	}
	m.appendRecords(mrand.New(mrand.NewSource(3)), 20)
	addr := m.svc.Addr()
	refusal := ha.Refusal()
	if f, err := ha.Decode(refusal); err != nil || f.(ha.HandshakeReply).OK || f.(ha.HandshakeReply).MasterEpoch != 0 ||
		f.(ha.HandshakeReply).MaxOffset != 0 || len(f.(ha.HandshakeReply).Epochs) != 0 {
		t.Fatalf("the refusal %+v %v tells something", f, err)
	}

	t.Run("noise", func(t *testing.T) {
		if got := readAll(t, addr, []byte("GET / HTTP/1.0\r\n\r\n")); !bytes.Equal(got, refusal) {
			t.Fatalf("answer %x, want the fixed refusal", got)
		}
	})
	t.Run("version 1 with the old static token", func(t *testing.T) {
		// What a v1 broker of the group sent: the group's name (or its
		// HMAC under the credentials' secret), the same on every connection.
		for _, token := range []string{testGroup, testGroup + "/0123abcd"} {
			if got := readAll(t, addr, v1Handshake(token, 2, 7, 0)); !bytes.Equal(got, refusal) {
				t.Fatalf("answer to a v1 handshake %x, want the fixed refusal", got)
			}
		}
	})
	t.Run("wrong secret", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		p := challenge.Params{Magic: ha.ChallengeMagic, Label: ha.ChallengeLabel, Secret: []byte("not-the-secret-0123456789")}
		hs := ha.AppendFrame(nil, ha.Handshake{Version: ha.Version, ReplicaID: 2})
		err = challenge.Dial(c, p, ha.ReplicaPeerID(testGroup, 2), ha.MasterPeerID(testGroup, addr), hs)
		if !errors.Is(err, challenge.ErrBadProof) {
			t.Fatalf("the master's proof checked with a wrong secret: %v", err)
		}
		// A stranger does not stop at a proof it cannot check: it sends a
		// made-up one and its handshake, and reads what comes.
		raw := readAll(t, addr, append(helloFor(2), make([]byte, challenge.MACLen)...))
		// The master's challenge (nonce, its id, its proof), then the refusal.
		id := ha.MasterPeerID(testGroup, addr)
		head := challenge.NonceLen + 1 + len(id) + challenge.MACLen
		if len(raw) != head+len(refusal) || !bytes.Equal(raw[head:], refusal) {
			t.Fatalf("answer to a wrong proof %x, want the challenge and the fixed refusal", raw)
		}
	})
	t.Run("replayed proof", func(t *testing.T) {
		// A genuine replica's bytes, recorded on the wire, replayed on a
		// new connection: the master's nonce differs, the proof fails.
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		rec := &writeRecorder{Conn: c}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		p := challenge.Params{Magic: ha.ChallengeMagic, Label: ha.ChallengeLabel, Secret: testSecret}
		hs := ha.AppendFrame(nil, ha.Handshake{Version: ha.Version, ReplicaID: 2, Epoch: 7})
		if err := challenge.Dial(rec, p, ha.ReplicaPeerID(testGroup, 2), ha.MasterPeerID(testGroup, addr), hs); err != nil {
			t.Fatalf("a replica with the secret: %v", err)
		}
		_ = c.Close()
		raw := readAll(t, addr, rec.w.Bytes())
		if !bytes.HasSuffix(raw, refusal) || len(raw) != challenge.NonceLen+1+len(ha.MasterPeerID(testGroup, addr))+challenge.MACLen+len(refusal) {
			t.Fatalf("answer to a replayed proof %x, want the challenge and the fixed refusal", raw)
		}
	})
	if got := m.svc.Refused(); got < 5 {
		t.Fatalf("%d refusals counted, want at least 4", got)
	}
	if len(m.svc.Replicas()) != 0 {
		t.Fatalf("a stranger was attached: %+v", m.svc.Replicas())
	}
}

// writeRecorder keeps what is written through it.
type writeRecorder struct {
	net.Conn
	w bytes.Buffer
}

func (r *writeRecorder) Write(p []byte) (int, error) { r.w.Write(p); return r.Conn.Write(p) }

// helloFor is a dialer's hello as replica id of the test group.
func helloFor(id int64) []byte {
	pid := ha.ReplicaPeerID(testGroup, id)
	b := append([]byte(ha.ChallengeMagic), make([]byte, challenge.NonceLen)...)
	return append(append(b, byte(len(pid))), pid...)
}

// fakeMaster listens where a controller (or an attacker who wrote to it)
// says the master is and speaks the master's side with secret; it records
// every byte the replica sends. relay, when set, forwards the connection
// to that address instead (a man in the middle).
type fakeMaster struct {
	ln  net.Listener
	mu  sync.Mutex
	got [][]byte // per connection, what the replica sent
	wg  sync.WaitGroup
}

func startFakeMaster(t *testing.T, secret []byte, relay string) *fakeMaster {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeMaster{ln: ln}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				f.serve(c, secret, relay)
			}()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); f.wg.Wait() })
	return f
}

// recordingConn keeps what is read through it.
type recordingConn struct {
	net.Conn
	r bytes.Buffer
}

func (c *recordingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.r.Write(p[:n])
	return n, err
}

func (f *fakeMaster) serve(raw net.Conn, secret []byte, relay string) {
	defer raw.Close()
	_ = raw.SetDeadline(time.Now().Add(3 * time.Second))
	c := &recordingConn{Conn: raw}
	defer func() {
		_, _ = io.Copy(io.Discard, c) // everything the replica still sends
		f.mu.Lock()
		f.got = append(f.got, c.r.Bytes())
		f.mu.Unlock()
	}()
	if relay != "" {
		up, err := net.Dial("tcp", relay)
		if err != nil {
			return
		}
		defer up.Close()
		_ = up.SetDeadline(time.Now().Add(3 * time.Second))
		go func() { _, _ = io.Copy(raw, up); _ = raw.Close() }()
		_, _ = io.Copy(up, c)
		return
	}
	if acceptAsMaster(c, secret, f.ln.Addr().String()) != nil {
		return
	}
	// Had the replica been fooled: an accepted handshake and forged bytes.
	_, _ = c.Write(ha.AppendFrame(nil, ha.HandshakeReply{OK: true, MasterEpoch: 5, Epochs: []ha.Epoch{{Epoch: 5}}}))
	_, _ = c.Write(ha.AppendFrame(nil, ha.Transfer{Epoch: 5, Body: makeRecord(200, 1)}))
}

func (f *fakeMaster) received() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.got...)
}

// TestFakeMasterGetsNothing: a replica sent to a listener that speaks the
// master's side with a wrong secret sends it only its hello (a fresh
// nonce and its id: nothing replayable, no proof, no handshake) and
// appends nothing; sent to a relay in front of the real master (the
// master's proven address is not the one the replica was given), it
// appends nothing either.
func TestFakeMasterGetsNothing(t *testing.T) {
	m, _ := group(t, 0, []int64{1}, nil)
	m.appendRecords(mrand.New(mrand.NewSource(5)), 10)
	for _, tc := range []struct {
		name           string
		secret         []byte
		relay          string
		maxConnections int
	}{
		{name: "wrong secret", secret: []byte("the-attackers-guess-0123")},
		{name: "relay to the real master", relay: m.svc.Addr()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := startFakeMaster(t, tc.secret, tc.relay)
			r := newNode(t, role.State{}, nil)
			r.role.Set(role.State{Kind: role.Replica, ReplicaID: 2, BrokerID: 2, Epoch: 1, MasterHAAddr: fake.ln.Addr().String()})
			waitFor(t, "two attempts of the replica", 5*time.Second, func() bool { return len(fake.received()) >= 2 })
			if r.store.CommitLog.MaxOffset() != 0 || len(r.epochs.Entries()) != 0 {
				t.Fatalf("the replica took data from a fake master: end %d, epochs %v",
					r.store.CommitLog.MaxOffset(), r.epochs.Entries())
			}
			hello := len(helloFor(2))
			seen := map[string]bool{}
			for _, got := range fake.received() {
				if tc.relay == "" && len(got) != hello {
					t.Fatalf("the fake master received %d bytes, want only the %d-byte hello: %x", len(got), hello, got)
				}
				if !bytes.HasPrefix(got, []byte(ha.ChallengeMagic)) {
					t.Fatalf("the replica sent %x", got)
				}
				nonce := string(got[len(ha.ChallengeMagic) : len(ha.ChallengeMagic)+challenge.NonceLen])
				if seen[nonce] {
					t.Fatal("the replica's nonce repeated across connections")
				}
				seen[nonce] = true
			}
			if len(m.svc.Replicas()) != 0 {
				t.Fatalf("the real master attached a relayed replica: %+v", m.svc.Replicas())
			}
		})
	}
}
