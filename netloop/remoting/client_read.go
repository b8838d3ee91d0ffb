package remoting

// The read side of Client: frames are read in place from the connection's
// buffer, binary headers decoded into one reused command.

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
)

// readBufferSize is the size of a Client's read buffer; larger frames get
// a buffer of their own.
const readBufferSize = 64 << 10

// readLoop reads frames until the connection fails, delivering responses
// to their calls and requests to OnRequest.
func (c *Client) readLoop() {
	r := frameReader{br: bufio.NewReaderSize(c.conn, readBufferSize), max: c.opts.MaxFrame}
	var scratch Command // binary frames are decoded into it (see handle)
	for {
		frame, owned, err := r.next()
		if err == nil {
			err = c.handle(frame, owned, &scratch)
		}
		if err != nil {
			c.shutdown(err)
			return
		}
	}
}

// handle decodes one frame and hands it on: a response to its call, a
// request to serve. A binary header is decoded into scratch (its map
// reused, its body aliasing frame), which a GoTransient call gets as it is
// and any other receiver as a copy of its own.
func (c *Client) handle(frame []byte, owned bool, scratch *Command) error {
	cmd := scratch
	if len(frame) >= headerWordSize && SerializeType(frame[0]) == SerializeRocketMQ {
		if err := decodeFrameInto(scratch, frame); err != nil {
			return err
		}
	} else {
		var err error
		if cmd, err = decodeFrame(frame, false); err != nil {
			return err
		}
		owned = true // cmd is not the scratch: nothing to copy
		scratch = nil
	}
	if cmd.IsResponse() {
		cl, ok := c.take(cmd.Opaque)
		if !ok {
			c.log.Debug().Int32("opaque", cmd.Opaque).Int32("code", cmd.Code).Msg("remoting response without waiter dropped")
			return nil
		}
		if cmd == scratch && !cl.transient {
			cmd = ownCopy(cmd, owned)
		}
		cl.done(cmd, nil)
		return nil
	}
	select {
	case <-c.done:
		return nil
	default:
	}
	if cmd == scratch {
		cmd = ownCopy(cmd, owned)
	}
	c.goOwned("request", func() { c.serve(cmd) })
	return nil
}

// ownCopy returns a copy of the scratch command that shares nothing the
// reader reuses: its own map, and its own body unless the frame was
// allocated for it (owned).
func ownCopy(scratch *Command, owned bool) *Command {
	cp := *scratch
	cp.ExtFields = maps.Clone(scratch.ExtFields)
	if !owned && len(cp.Body) > 0 {
		cp.Body = append([]byte(nil), cp.Body...)
	}
	return &cp
}

// frameReader reads frames from a buffered connection: a frame that fits
// the buffer is returned in place, valid until the next call; a larger
// one in a buffer of its own (owned).
type frameReader struct {
	br   *bufio.Reader
	max  int
	skip int // bytes of the previous frame still in the buffer
}

// next returns the bytes of the next frame after its length field. Errors
// are as ReadFrame's.
func (r *frameReader) next() (frame []byte, owned bool, err error) {
	if r.skip > 0 {
		_, _ = r.br.Discard(r.skip) // buffered: cannot fail
		r.skip = 0
	}
	maxFrame := r.max
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrame
	}
	lb, err := r.br.Peek(lengthFieldSize)
	if err != nil {
		if err == io.EOF && len(lb) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, false, fmt.Errorf("remoting read frame length: %w", err)
	}
	n := int64(int32(binary.BigEndian.Uint32(lb)))
	if n < headerWordSize {
		return nil, false, fmt.Errorf("remoting read frame: length %d: %w", n, ErrMalformed)
	}
	if n > int64(maxFrame) {
		return nil, false, fmt.Errorf("remoting read frame: length %d exceeds %d: %w", n, maxFrame, ErrFrameTooLarge)
	}
	_, _ = r.br.Discard(lengthFieldSize)
	if n <= int64(r.br.Size()) {
		frame, err = r.br.Peek(int(n))
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, false, fmt.Errorf("remoting read frame body of %d bytes: %w", n, err)
		}
		r.skip = int(n)
		return frame, false, nil
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r.br, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, false, fmt.Errorf("remoting read frame body of %d bytes: %w", n, err)
	}
	return buf, true, nil
}
