package netloop

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// memInbound is an inbound buffer fed by tests. Peek returns a fresh copy
// that Discard overwrites, as gnet may reuse its buffers, so a decoder
// that keeps Peek'd bytes is caught.
type memInbound struct {
	buf  []byte
	last []byte
}

func (m *memInbound) Peek(n int) ([]byte, error) {
	if n > len(m.buf) {
		return nil, io.ErrShortBuffer
	}
	m.last = append([]byte(nil), m.buf[:n]...)
	return m.last, nil
}

func (m *memInbound) Discard(n int) (int, error) {
	for i := range m.last {
		m.last[i] = 0xa5 // poison what the caller was given
	}
	m.buf = m.buf[n:]
	return n, nil
}

func (m *memInbound) InboundBuffered() int { return len(m.buf) }

// drainChunked feeds stream to drainFrames in chunks whose sizes cycle
// through sizes, and returns the delivered commands and the first error.
func drainChunked(stream []byte, sizes []byte, maxFrame int) ([]*remoting.Command, error) {
	var (
		in   memInbound
		cmds []*remoting.Command
	)
	for i := 0; len(stream) > 0; i++ {
		n := 1
		if len(sizes) > 0 {
			n = int(sizes[i%len(sizes)]) + 1
		}
		n = min(n, len(stream))
		in.buf = append(in.buf, stream[:n]...)
		stream = stream[n:]
		if err := drainFrames(&in, frameLimits{maxFrame: maxFrame}, nil, func(c *remoting.Command) { cmds = append(cmds, c) }); err != nil {
			return cmds, err
		}
	}
	return cmds, nil
}

// readAll decodes stream with the blocking reader, the reference.
func readAll(stream []byte, maxFrame int) ([]*remoting.Command, error) {
	r := bytes.NewReader(stream)
	var cmds []*remoting.Command
	for {
		c, err := remoting.ReadFrame(r, maxFrame)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return cmds, nil // incomplete tail: drainFrames waits too
			}
			return cmds, err
		}
		cmds = append(cmds, c)
	}
}

// checkDrainMatchesReadFrame fails when chunked draining and ReadFrame
// disagree on the commands or on whether the stream is bad.
func checkDrainMatchesReadFrame(t *testing.T, stream, sizes []byte, maxFrame int) {
	t.Helper()
	got, gerr := drainChunked(stream, sizes, maxFrame)
	want, werr := readAll(stream, maxFrame)
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("drainFrames err=%v, ReadFrame err=%v", gerr, werr)
	}
	if gerr != nil && !errors.Is(gerr, ErrBadFrame) {
		t.Fatalf("error %v does not wrap ErrBadFrame", gerr)
	}
	if len(got) != len(want) {
		t.Fatalf("drainFrames delivered %d commands, ReadFrame %d", len(got), len(want))
	}
	for i := range got {
		a, _ := remoting.EncodeFrame(got[i])
		b, _ := remoting.EncodeFrame(want[i])
		if !bytes.Equal(a, b) {
			t.Fatalf("command %d differs: %+v vs %+v", i, got[i], want[i])
		}
	}
}

// testStream is three frames in both encodings, one with a body.
func testStream(t testing.TB) []byte {
	var stream []byte
	for i, st := range []remoting.SerializeType{remoting.SerializeJSON, remoting.SerializeRocketMQ, remoting.SerializeJSON} {
		c := remoting.NewRequest(remoting.SendMessage, map[string]string{"topic": "T"}, bytes.Repeat([]byte{byte(i)}, i*50))
		c.Opaque, c.Serialize = int32(i+1), st
		var err error
		if stream, err = remoting.AppendFrame(stream, c); err != nil {
			t.Fatal(err)
		}
	}
	return stream
}

func TestDrainFrames(t *testing.T) {
	stream := testStream(t)
	tests := []struct {
		name     string
		stream   []byte
		sizes    []byte
		maxFrame int
		wantCmds int
		wantErr  error
	}{
		{"whole stream at once", stream, []byte{255, 255, 255}, 1 << 20, 3, nil},
		{"byte by byte", stream, nil, 1 << 20, 3, nil},
		{"uneven chunks", stream, []byte{2, 6, 0, 40}, 1 << 20, 3, nil},
		{"partial tail waits", stream[:len(stream)-1], []byte{9}, 1 << 20, 2, nil},
		{"frame over limit", stream, []byte{255}, 150, 2, remoting.ErrFrameTooLarge},
		{"negative length", append(append([]byte{}, stream...), 0xff, 0, 0, 0), []byte{255}, 1 << 20, 3, remoting.ErrMalformed},
		{"bad header after good frames", append(append([]byte{}, stream...), 0, 0, 0, 5, 0, 0, 0, 1, '['), []byte{3}, 1 << 20, 3, remoting.ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmds, err := drainChunked(tc.stream, tc.sizes, tc.maxFrame)
			if len(cmds) != tc.wantCmds {
				t.Fatalf("delivered %d commands, want %d", len(cmds), tc.wantCmds)
			}
			for i, c := range cmds {
				if c.Opaque != int32(i+1) || !bytes.Equal(c.Body, bytes.Repeat([]byte{byte(i)}, i*50)) {
					t.Fatalf("command %d: %+v", i, c)
				}
			}
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("err %v", err)
				}
			} else if !errors.Is(err, ErrBadFrame) || !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want ErrBadFrame and %v", err, tc.wantErr)
			}
			checkDrainMatchesReadFrame(t, tc.stream, tc.sizes, tc.maxFrame)
		})
	}
}

// FuzzDrainFrames feeds arbitrary bytes in arbitrary chunks to the event
// loop's frame splitter and checks it agrees with the blocking reader.
func FuzzDrainFrames(f *testing.F) {
	stream := testStream(f)
	f.Add(stream, []byte{0})
	f.Add(stream, []byte{255, 3, 17})
	f.Add(stream[:len(stream)/2], []byte{7})
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"), []byte{1})
	f.Add([]byte{0, 0, 0, 4, 0, 0, 0, 0}, []byte{})
	f.Add([]byte{0, 0, 0, 6, 1, 0, 0, 2, 0, 1}, []byte{2})
	f.Fuzz(func(t *testing.T, stream, sizes []byte) {
		checkDrainMatchesReadFrame(t, stream, sizes, 1<<16)
	})
}
