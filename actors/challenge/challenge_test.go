package challenge

import (
	"bytes"
	"errors"
	"net"
	"testing"
	"time"
)

var testParams = Params{Magic: "TESTCHL1", Label: "test-v1", Secret: []byte("0123456789abcdef")}

// run runs both sides over a loopback connection; the acceptor allows "d".
func run(t *testing.T, dp, ap Params, peer string, then []byte) (got []byte, dErr, aErr error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	d, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	a, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	_ = d.SetDeadline(time.Now().Add(5 * time.Second))
	_ = a.SetDeadline(time.Now().Add(5 * time.Second))
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer a.Close()
		var id string
		id, aErr = Accept(a, ap, "a", func(id string) bool { return id == "d" })
		if aErr == nil && id != "d" {
			aErr = errors.New("wrong id " + id)
		}
		if aErr == nil && len(then) > 0 {
			got = make([]byte, len(then))
			_, aErr = a.Read(got)
		}
	}()
	dErr = Dial(d, dp, "d", peer, then)
	if dErr != nil {
		_ = d.Close()
	}
	<-done
	return got, dErr, aErr
}

func TestChallenge(t *testing.T) {
	if got, d, a := run(t, testParams, testParams, "a", []byte("first")); d != nil || a != nil || string(got) != "first" {
		t.Fatalf("good secret: dialer %v, acceptor %v, then %q", d, a, got)
	}
	wrong := testParams
	wrong.Secret = []byte("fedcba9876543210")
	if _, d, _ := run(t, wrong, testParams, "a", nil); !errors.Is(d, ErrBadProof) {
		t.Fatalf("dialer with a wrong secret accepted the acceptor: %v", d)
	}
	if _, _, a := run(t, testParams, wrong, "a", nil); a == nil {
		t.Fatal("acceptor with a wrong secret passed")
	}
	if _, d, _ := run(t, testParams, testParams, "b", nil); !errors.Is(d, ErrPeer) {
		t.Fatalf("dialer took another acceptor id: %v", d)
	}
	bound := testParams
	bound.Binding = []byte("binding-1")
	if _, d, _ := run(t, bound, testParams, "a", nil); !errors.Is(d, ErrBadProof) {
		t.Fatalf("a proof over another channel binding passed: %v", d)
	}
	other := testParams
	other.Magic = "OTHERPR1"
	if _, _, a := run(t, other, testParams, "a", nil); !errors.Is(a, ErrNotOurs) {
		t.Fatalf("another protocol's hello: %v", a)
	}
}

// TestTranscriptRoles: the two proofs of one transcript differ (neither
// can be reflected as the other) and depend on both nonces.
func TestTranscriptRoles(t *testing.T) {
	n1, n2 := bytes.Repeat([]byte{1}, NonceLen), bytes.Repeat([]byte{2}, NonceLen)
	t1 := testParams.transcript(n1, n2, "d", "a")
	if bytes.Equal(testParams.mac("dialer", t1), testParams.mac("acceptor", t1)) {
		t.Fatal("role does not change the proof")
	}
	if bytes.Equal(testParams.mac("dialer", t1), testParams.mac("dialer", testParams.transcript(n2, n1, "d", "a"))) {
		t.Fatal("nonces do not change the proof")
	}
}
