package remoting

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestClientResponsesOwnedOrOnLoan sends a mix of requests (JSON and binary
// headers; empty, small and larger-than-the-read-buffer bodies; Go, Invoke
// and GoTransient) to an echo peer that answers out of order. Responses
// handed to Go and Invoke callers must stay intact after later frames are
// read (they may not share the reader's buffer or reused command); a
// GoTransient callback must see its own response while it runs.
func TestClientResponsesOwnedOrOnLoan(t *testing.T) {
	c := dialT(t, servePeer(t, echoPeer(t)), ClientOptions{})
	sizes := []int{0, 10, readBufferSize + 1000}
	type kept struct {
		i    int
		resp *Command
	}
	var (
		mu        sync.Mutex
		keptResps []kept
		loaned    = map[*Command]int{} // how often each transient *Command was seen
		wg        sync.WaitGroup
		errs      = make(chan error, 200)
	)
	want := func(i int) (string, []byte) {
		return strconv.Itoa(i), bytes.Repeat([]byte{byte('a' + i%26)}, sizes[i%len(sizes)])
	}
	check := func(i int, resp *Command) error {
		field, body := want(i)
		if resp.Field("i") != field || !bytes.Equal(resp.Body, body) {
			return errors.New("request " + strconv.Itoa(i) + ": response of another request or overwritten: i=" + resp.Field("i"))
		}
		return nil
	}
	const n = 120
	for i := range n {
		field, body := want(i)
		req := NewRequest(SendMessage, map[string]string{"i": field, "delayMs": strconv.Itoa((n - i) % 5)}, body)
		if i%2 == 1 {
			req.Serialize = SerializeRocketMQ
		}
		wg.Add(1)
		switch i % 3 {
		case 0: // Go: the response is the caller's
			if err := c.Go(req, 5*time.Second, func(resp *Command, err error) {
				defer wg.Done()
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				keptResps = append(keptResps, kept{i, resp})
				mu.Unlock()
			}); err != nil {
				t.Fatal(err)
			}
		case 1: // GoTransient: checked while on loan
			if err := c.GoTransient(req, 5*time.Second, func(resp *Command, err error) {
				defer wg.Done()
				if err == nil {
					err = check(i, resp)
				}
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				loaned[resp]++
				mu.Unlock()
			}); err != nil {
				t.Fatal(err)
			}
		default: // Invoke, from its own goroutine
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				resp, err := c.Invoke(ctx, req)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				keptResps = append(keptResps, kept{i, resp})
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, k := range keptResps {
		if err := check(k.i, k.resp); err != nil {
			t.Error(err)
		}
	}
	if len(keptResps) != n-n/3 {
		t.Errorf("%d responses kept, want %d", len(keptResps), n-n/3)
	}
	// Binary transient responses share the reader's one command.
	reused := false
	for _, count := range loaned {
		reused = reused || count > 1
	}
	if !reused {
		t.Errorf("no transient response reused the reader's command: %v", loaned)
	}
}

// TestClientServerRequestsOwned checks that a binary server request handed
// to OnRequest is the handler's own: frames read while it runs do not
// change it.
func TestClientServerRequestsOwned(t *testing.T) {
	release := make(chan struct{})
	lastRead := make(chan struct{})
	first := make(chan *Command, 1)
	addr := servePeer(t, func(p *peer) {
		p.send(t, &Command{Code: NotifyConsumerIDsChanged, Opaque: 7, Flag: FlagOneway, Serialize: SerializeRocketMQ,
			ExtFields: map[string]string{"first": "yes"}, Body: []byte("first body")})
		for i := range 50 { // answers nobody waits for, read while the handler holds the request
			p.send(t, &Command{Code: Success, Opaque: int32(1000 + i), Flag: FlagResponse, Serialize: SerializeRocketMQ,
				ExtFields: map[string]string{"first": "no", "n": strconv.Itoa(i)}, Body: []byte("later body")})
		}
		p.send(t, &Command{Code: NotifyConsumerIDsChanged, Opaque: 8, Flag: FlagOneway, Serialize: SerializeRocketMQ,
			ExtFields: map[string]string{"last": "yes"}})
		<-release
	})
	dialT(t, addr, ClientOptions{OnRequest: func(req *Command) *Command {
		if req.Opaque == 8 {
			close(lastRead)
			return nil
		}
		select { // hold the request until everything after it was read
		case <-lastRead:
		case <-time.After(5 * time.Second):
		}
		first <- req
		return nil
	}})
	defer close(release)
	select {
	case req := <-first:
		select {
		case <-lastRead:
		default:
			t.Fatal("the last request was never read")
		}
		if req.Field("first") != "yes" || len(req.ExtFields) != 1 || string(req.Body) != "first body" {
			t.Fatalf("the first request changed under its handler: %v %q", req.ExtFields, req.Body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the first handler never finished")
	}
}

// TestClientCancel checks that a cancelled request's done is never called
// and that a second Cancel reports it gone.
func TestClientCancel(t *testing.T) {
	c := dialT(t, servePeer(t, silentPeer), ClientOptions{})
	called := make(chan error, 2)
	req := NewRequest(HeartBeat, nil, nil)
	if err := c.GoTransient(req, time.Minute, func(_ *Command, err error) { called <- err }); err != nil {
		t.Fatal(err)
	}
	if !c.Cancel(req.Opaque) || c.Pending() != 0 {
		t.Fatalf("Cancel of a waiting request: pending %d", c.Pending())
	}
	if c.Cancel(req.Opaque) {
		t.Fatal("second Cancel found the request")
	}
	c.Close()
	select {
	case err := <-called:
		t.Fatalf("done of a cancelled request ran: %v", err)
	default:
	}
}

// FuzzFrameReader feeds a byte stream to the client's frame reader (with a
// small buffer, so both the in-place and the owned path run) and to
// ReadFrame: both must read the same frames, decode them alike (binary
// headers through the reused command) and fail at the same point.
func FuzzFrameReader(f *testing.F) {
	seeds := goldenSeeds(f)
	f.Add(bytes.Join(seeds, nil))
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		const maxFrame = 4096
		ref := bufio.NewReader(bytes.NewReader(stream))
		r := frameReader{br: bufio.NewReaderSize(bytes.NewReader(stream), 64), max: maxFrame}
		var scratch Command
		for {
			want, wantErr := ReadFrame(ref, maxFrame)
			frame, _, err := r.next()
			if err != nil { // a read error: ReadFrame must have failed the same way
				if wantErr == nil {
					t.Fatalf("frame reader error %v, ReadFrame read %+v", err, want)
				}
				for _, class := range []error{io.EOF, io.ErrUnexpectedEOF, ErrMalformed, ErrFrameTooLarge} {
					if errors.Is(err, class) != errors.Is(wantErr, class) {
						t.Fatalf("frame reader error %v, ReadFrame %v", err, wantErr)
					}
				}
				return
			}
			got, derr := decodeFrame(frame, false)
			if len(frame) >= headerWordSize && SerializeType(frame[0]) == SerializeRocketMQ {
				if derr2 := decodeFrameInto(&scratch, frame); (derr2 != nil) != (derr != nil) {
					t.Fatalf("decode into: %v, decode: %v", derr2, derr)
				} else if derr == nil {
					if d := sameCommand(&scratch, got); d != "" {
						t.Fatalf("decoded into the reused command: %s", d)
					}
				}
			}
			if (derr != nil) != (wantErr != nil) {
				t.Fatalf("decode error %v, ReadFrame %v", derr, wantErr)
			}
			if derr != nil {
				return
			}
			if d := sameCommand(got, want); d != "" {
				t.Fatalf("frames differ: %s", d)
			}
		}
	})
}
