package remoting

// The write side of Client: frames are appended to one output buffer, and
// whoever finds the socket free writes everything queued.

import (
	"context"
	"fmt"
	"time"
)

// enqueue encodes cmd into the output buffer and flushes it (see flush for
// async). When the buffer is full it waits for room until ctx ends or
// timeout passes (see waitRoom).
func (c *Client) enqueue(ctx context.Context, timeout time.Duration, cmd *Command, async bool) error {
	if err := c.waitRoom(ctx, timeout); err != nil {
		return fmt.Errorf("remoting write code %d: %w", cmd.Code, err)
	}
	var e *ExtEncoder
	if cmd.Ext != nil {
		e = &c.out.ext
	}
	buf, err := appendFrame(c.out.buf, cmd, e)
	c.out.buf = buf
	c.out.Unlock()
	if err != nil {
		return fmt.Errorf("remoting write code %d to %s: %w", cmd.Code, c.addr, err)
	}
	c.flush(async)
	return nil
}

// waitRoom locks c.out and returns with it locked once the output buffer
// is below MaxQueuedBytes (the goroutine writing takes it). The wait ends
// with an error when the connection closes, ctx (if not nil) ends, or
// timeout (if positive; WriteTimeout when there is neither a ctx nor a
// timeout) passes; then c.out is unlocked.
func (c *Client) waitRoom(ctx context.Context, timeout time.Duration) error {
	c.out.Lock()
	if len(c.out.buf) < c.opts.MaxQueuedBytes {
		return nil
	}
	var expired <-chan time.Time
	var ctxDone <-chan struct{}
	if ctx != nil {
		ctxDone = ctx.Done()
	} else if timeout <= 0 {
		timeout = c.opts.WriteTimeout
	}
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	for len(c.out.buf) >= c.opts.MaxQueuedBytes {
		if c.out.drained == nil {
			c.out.drained = make(chan struct{})
		}
		drained := c.out.drained
		c.out.Unlock()
		select {
		case <-drained:
		case <-c.done:
			return fmt.Errorf("waiting for room to write to %s: %w (%w)", c.addr, ErrClosed, c.closeErr)
		case <-ctxDone:
			return fmt.Errorf("waiting for room to write to %s: %w", c.addr, ctx.Err())
		case <-expired:
			return fmt.Errorf("waiting for room to write to %s: %d bytes queued after %v: %w (%w)",
				c.addr, c.opts.MaxQueuedBytes, timeout, ErrTimeout, context.DeadlineExceeded)
		}
		c.out.Lock()
	}
	return nil
}

// flush gets the queued frames written. A caller that waits for an answer
// (or sends none: oneway, raw, answers to the server) writes them itself,
// unless another goroutine is writing: that one checks the buffer again
// after it lets go, so no frame is left behind, and under contention many
// frames share one write. An async caller (Go) that is not alone on the
// connection wakes the writer goroutine instead and goes on: while the
// writer wakes and writes, the frames of its next sends pile up behind and
// go out together, one write for many where writing itself would cost a
// write each.
func (c *Client) flush(async bool) {
	if async && c.pending.Load() > 1 {
		select {
		case c.kick <- struct{}{}:
		default: // already woken
		}
		return
	}
	c.writeAll()
}

// writeAll writes the queued frames, unless another goroutine is writing.
func (c *Client) writeAll() {
	for {
		if !c.wmu.TryLock() {
			return
		}
		c.writeQueued()
		c.wmu.Unlock()
		c.out.Lock()
		empty := len(c.out.buf) == 0
		c.out.Unlock()
		if empty {
			return
		}
	}
}

// writeLoop writes queued frames whenever it is kicked, until the
// connection is gone.
func (c *Client) writeLoop() {
	for {
		select {
		case <-c.kick:
			c.writeAll()
		case <-c.done:
			return
		}
	}
}

// writeQueued writes the output buffer until it is empty, each batch of
// frames with one write bounded by WriteTimeout (half of it at least).
// wmu should be held.
func (c *Client) writeQueued() {
	for {
		c.out.Lock()
		buf := c.out.buf
		if len(buf) == 0 {
			c.out.Unlock()
			return
		}
		c.out.buf = c.spare[:0]
		if c.out.drained != nil {
			close(c.out.drained)
			c.out.drained = nil
		}
		c.out.Unlock()
		select {
		case <-c.done:
			return // the frames die with the connection; their calls have failed
		default:
		}
		// The deadline is moved only when less than half of WriteTimeout
		// is left, so a write is bounded by half to all of WriteTimeout
		// and most writes do not touch it.
		if now := monoNow(); now > c.wdeadline-int64(c.opts.WriteTimeout/2) {
			if err := c.conn.SetWriteDeadline(time.Now().Add(c.opts.WriteTimeout)); err != nil {
				c.shutdown(fmt.Errorf("set write deadline: %w", err))
				return
			}
			c.wdeadline = now + int64(c.opts.WriteTimeout)
		}
		if _, err := c.conn.Write(buf); err != nil {
			// Part of a frame may be on the wire: the connection is unusable.
			c.shutdown(fmt.Errorf("write: %w", err))
			return
		}
		if cap(buf) <= maxKeptWriteBuf {
			c.spare = buf[:0]
		} else {
			c.spare = nil
		}
	}
}
