package producer

// One send runs as an op: up to 1+retries attempts (oneway: retries only
// of errors before the request left). Each attempt has its own deadline,
// the send timeout, which bounds its route lookup, its dial and the wait for
// the answer; the caller's context bounds the whole send. An attempt picks a
// queue (skipping the broker that failed last), writes the request on the
// broker's pipelined connection and, for sync sends, waits for the answer on
// the calling goroutine; async answers go to the producer's workers, which
// retry or run the callback. A failed attempt asks for the topic's route at
// once and, with fault tolerance, isolates its broker; one that says the
// route is stale (not master, connection lost) waits for a new route before
// the next attempt (failover.go).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// op is one send under way. Ops are pooled (getOp, free): a send costs no
// allocation for its state, its request or its answer callback.
type op struct {
	p    *Producer
	mode Mode
	msgs []*Message
	one  [1]*Message // msgs of a single send
	pr   prepared
	ctx  context.Context

	attempt    int
	lastFailed string  // broker of the last failed attempt
	errs       []error // one per failed attempt
	busy       uint    // SYSTEM_BUSY answers so far

	// async only
	cb     func(*SendResult, error)
	permit int // bytes to release

	// onAnswer takes an attempt's answer on the connection's reader (the
	// response is on loan: remoting.Client.GoTransient), parses it into
	// ansRes and ansErr, and signals answered (sync) or posts the op to
	// the workers (async). It is made once per op.
	onAnswer func(*remoting.Command, error)
	answered chan struct{}
	ansRes   *SendResult
	ansErr   error

	// the current attempt
	q       Queue
	addr    string
	hooked  bool // Before hooks ran; After is due
	sentAt  time.Time
	dueAt   time.Time // the attempt's deadline
	release context.CancelFunc
	// slow says the attempt waited before its request was written (a
	// route lookup, a dial, hooks), so the time left is read anew.
	slow bool
	// clock, when set, is a reading of the clock taken just before the
	// first attempt, which it uses as its start: one reading of the clock
	// serves the UNIQ_KEY, the send time and the born timestamp.
	clock time.Time
}

// getOp returns a cleared op from the pool.
func (p *Producer) getOp(mode Mode, ctx context.Context) *op {
	o, _ := p.ops.Get().(*op)
	if o == nil {
		o = &op{p: p, answered: make(chan struct{}, 1)}
		o.onAnswer = o.answer
	}
	o.mode, o.ctx = mode, ctx
	return o
}

// single makes m the op's only message.
func (o *op) single(m *Message) {
	o.one[0] = m
	o.msgs = o.one[:]
}

// free clears o and puts it back in the pool. Nothing may use it after:
// results and errors handed out do not refer to it.
func (o *op) free() {
	clear(o.errs)
	o.errs = o.errs[:0]
	o.msgs, o.one[0], o.ctx, o.cb, o.ansRes, o.ansErr = nil, nil, nil, nil, nil, nil
	o.attempt, o.lastFailed, o.busy, o.permit = 0, "", 0, 0
	o.q, o.addr, o.hooked, o.slow, o.clock = Queue{}, "", false, false, time.Time{}
	o.pr.reset()
	o.p.ops.Put(o)
}

// Send sends m and waits for the broker's answer, retrying failed attempts
// (on another broker when there is one). The context bounds the whole send;
// each attempt is also bounded by the send timeout.
func (p *Producer) Send(ctx context.Context, m *Message) (*SendResult, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.active.Done()
	o := p.getOp(ModeSync, ctx)
	defer o.free()
	if err := o.prepareSingle(m); err != nil {
		return nil, err
	}
	o.single(m)
	return o.runSync()
}

// SendBatch sends msgs, all for one topic, as one SEND_BATCH_MESSAGE and
// waits for the answer; the result lists one id per message. Timer messages
// cannot be batched.
func (p *Producer) SendBatch(ctx context.Context, msgs ...*Message) (*SendResult, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.active.Done()
	o := p.getOp(ModeSync, ctx)
	defer o.free()
	if err := p.prepareBatch(&o.pr, msgs); err != nil {
		return nil, err
	}
	o.msgs = msgs
	return o.runSync()
}

// SendAsync sends m and returns once the request is under way; cb gets the
// result or the error later, on one of the producer's callback workers (so
// it may block briefly, but slows other callbacks when it does). Failed
// attempts are retried like Send's. When the producer's in-flight bound is
// reached SendAsync waits for a permit, within ctx and the send timeout. An
// error returned by SendAsync (invalid message, no permit, closed producer)
// means cb will not be called.
func (p *Producer) SendAsync(ctx context.Context, m *Message, cb func(*SendResult, error)) error {
	if cb == nil {
		return errors.New("producer: SendAsync needs a callback")
	}
	if err := p.enter(); err != nil {
		return err
	}
	o := p.getOp(ModeAsync, ctx)
	if err := o.prepareSingle(m); err != nil {
		o.free()
		p.active.Done()
		return err
	}
	permit, ok := p.limit.tryAcquire(len(o.pr.body))
	if !ok {
		wctx, cancel := context.WithTimeout(ctx, p.cfg.sendTimeout)
		var err error
		permit, err = p.limit.acquire(wctx, len(o.pr.body))
		cancel()
		if err != nil {
			o.free()
			p.active.Done()
			return err
		}
		o.clock = time.Time{} // it waited: read the clock anew
	}
	o.single(m)
	o.cb, o.permit = cb, permit
	o.stepAsync(false)
	return nil
}

// SendOneway writes m to a broker without waiting for an answer (the
// request carries the oneway flag, so the broker sends none). Only errors
// before the request left (route, connection, full output queue) are
// retried; a nil error does not mean the message was stored.
func (p *Producer) SendOneway(ctx context.Context, m *Message) error {
	if err := p.enter(); err != nil {
		return err
	}
	defer p.active.Done()
	o := p.getOp(ModeOneway, ctx)
	defer o.free()
	if err := o.prepareSingle(m); err != nil {
		return err
	}
	o.single(m)
	for o.attempt < 1+p.cfg.retries {
		o.attempt++
		c, req, err := o.begin()
		if err == nil {
			err = c.InvokeOneway(req)
		}
		if _, err = o.finishAttempt(nil, err); err == nil {
			return nil
		}
		o.errs = append(o.errs, err)
		if !o.retryable(err) {
			break
		}
	}
	return o.failure()
}

// runSync runs the attempts of a sync send on the calling goroutine.
func (o *op) runSync() (*SendResult, error) {
	for o.attempt < 1+o.p.cfg.retries {
		o.attempt++
		res, err := o.syncAttempt()
		if err == nil {
			return res, nil
		}
		o.errs = append(o.errs, err)
		if !o.retryable(err) {
			break
		}
		if f, stale := o.staleRoute(err); stale && o.attempt < 1+o.p.cfg.retries {
			if cerr := o.awaitRoute(f); cerr != nil {
				o.errs = append(o.errs, cerr)
				return nil, o.failure()
			}
			continue
		}
		if d := o.backoff(err); d > 0 && o.attempt < 1+o.p.cfg.retries {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-o.ctx.Done():
				t.Stop()
				o.errs = append(o.errs, o.ctx.Err())
				return nil, o.failure()
			}
		}
	}
	return nil, o.failure()
}

// backoff returns how long to wait before retrying after err: a broker
// that answered SYSTEM_BUSY gets 10 ms, then 20, 40, ... up to 200 ms
// (bounded by the caller's deadline through the next attempt); other
// failures are retried at once.
func (o *op) backoff(err error) time.Duration {
	var be *BrokerError
	if !errors.As(err, &be) || be.Code != remoting.SystemBusy {
		return 0
	}
	o.busy++
	return min(busyBackoff<<(o.busy-1), maxBusyBackoff)
}

// Backoff after SYSTEM_BUSY.
const (
	busyBackoff    = 10 * time.Millisecond
	maxBusyBackoff = 200 * time.Millisecond
)

// syncAttempt runs one attempt and waits for its answer.
func (o *op) syncAttempt() (*SendResult, error) {
	c, req, err := o.begin()
	if err != nil {
		return o.finishAttempt(nil, err)
	}
	if err := c.GoTransient(req, o.remaining(), o.onAnswer); err != nil {
		return o.finishAttempt(nil, err)
	}
	if done := o.ctx.Done(); done != nil {
		select {
		case <-o.answered:
		case <-done:
			if c.Cancel(req.Opaque) { // the answer will not come
				return o.finishAttempt(nil, o.ctx.Err())
			}
			<-o.answered // it is being delivered
		}
	} else {
		<-o.answered
	}
	return o.finishAttempt(o.ansRes, o.ansErr)
}

// answer is onAnswer (see op): it runs once per attempt, on the
// connection's reader, its deadline timer, or the goroutine that closed
// it, and only reads the op's current attempt, which is not changed until
// the answer is taken.
func (o *op) answer(resp *remoting.Command, err error) {
	o.ansRes, o.ansErr = nil, err
	if err == nil {
		o.ansRes, o.ansErr = parseSendResponse(resp, o.q, o.addr, o.pr.uniq)
	}
	if o.mode == ModeAsync {
		o.p.post(completion{op: o})
		return
	}
	o.answered <- struct{}{}
}

// remaining returns the time left to the attempt's deadline, at least a
// microsecond (a request always has a deadline of its own). An attempt
// that did not wait is taken to have started just now.
func (o *op) remaining() time.Duration {
	if !o.slow {
		return max(o.dueAt.Sub(o.sentAt), time.Microsecond)
	}
	return max(time.Until(o.dueAt), time.Microsecond)
}

// prepareSingle validates m and builds its properties and body, with one
// reading of the clock for its UNIQ_KEY and its first attempt.
func (o *op) prepareSingle(m *Message) error {
	o.clock = time.Now()
	if err := o.p.prepareSingle(&o.pr, m, o.clock); err != nil {
		return err
	}
	if o.pr.sysFlag&message.SysFlagCompressed != 0 {
		o.clock = time.Time{} // compressing took time: read the clock anew
	}
	return nil
}

// begin starts an attempt within its deadline: it finds the route, picks a
// queue, runs the Before hooks and gets the broker's connection. It returns
// the request to write.
func (o *op) begin() (*remoting.Client, *remoting.Command, error) {
	o.q, o.addr, o.hooked, o.slow = Queue{}, "", false, false
	o.sentAt, o.clock = o.clock, time.Time{}
	if o.sentAt.IsZero() {
		o.sentAt = time.Now()
	}
	o.dueAt = o.sentAt.Add(o.p.cfg.sendTimeout)
	if d, ok := o.ctx.Deadline(); ok && d.Before(o.dueAt) {
		o.dueAt = d
	}
	defer o.endCtx()
	if err := o.ctxErr(); err != nil {
		return nil, nil, err
	}
	inst := o.p.inst
	pub, ok := inst.CachedRoute(o.pr.topic)
	if !ok || len(pub.Queues) == 0 {
		var err error
		if pub, err = inst.PublishRoute(o.attemptCtx(), o.pr.topic); err != nil {
			if pub != nil && len(pub.Queues) == 0 && len(pub.Masterless) > 0 {
				return nil, nil, &noMasterError{broker: pub.Masterless[0], err: err}
			}
			return nil, nil, &routeError{err: err}
		}
	}
	q, err := o.p.choose(o.msgs[0], pub.Queues, o.lastFailed, o.sentAt)
	if err != nil {
		return nil, nil, err
	}
	o.q, o.addr = q, pub.Brokers[q.Broker]
	o.runBefore()
	c := inst.ConnIfUp(o.addr)
	if c == nil {
		if c, err = inst.Conn(o.attemptCtx(), o.addr); err != nil {
			return nil, nil, err
		}
	}
	return c, o.p.request(&o.pr, q, o.sentAt), nil
}

// attemptCtx returns a context ending at the attempt's deadline, created on
// first use (most attempts need none: route cached, connection up).
func (o *op) attemptCtx() context.Context {
	o.slow = true
	ctx, cancel := context.WithDeadline(o.ctx, o.dueAt)
	o.endCtx()
	o.release = cancel
	return ctx
}

// endCtx releases the attempt context, if any.
func (o *op) endCtx() {
	if o.release != nil {
		o.release()
		o.release = nil
	}
}

// finishAttempt accounts for an attempt's outcome (its parsed answer, or
// an error): fault tolerance, a route refresh after a failure, the After
// hooks. It returns the outcome, the error naming the attempt.
func (o *op) finishAttempt(res *SendResult, err error) (*SendResult, error) {
	var now time.Time
	var latency time.Duration
	if o.p.faults != nil || o.hooked { // only they need the latency
		now = time.Now()
		latency = now.Sub(o.sentAt)
	}
	if err != nil {
		res = nil
		where := "before choosing a queue"
		if o.q.Broker != "" {
			where = fmt.Sprintf("to %s at %s", o.q, o.addr)
		}
		err = fmt.Errorf("attempt %d %s: %w", o.attempt, where, err)
	}
	if o.q.Broker != "" && o.ctxErr() == nil {
		failed := err != nil && o.retryable(err)
		if o.p.faults != nil {
			o.p.faults.update(o.q.Broker, latency, failed, now)
		}
		if failed {
			o.lastFailed = o.q.Broker
			o.p.inst.RefreshSoon(o.pr.topic)
		}
	}
	if o.hooked {
		info := o.info()
		info.Result, info.Err, info.Latency = res, err, latency
		for _, h := range o.p.cfg.hooks {
			if h.After != nil {
				h.After(&info)
			}
		}
	}
	return res, err
}

// runBefore runs the Before hooks of the current attempt.
func (o *op) runBefore() {
	if len(o.p.cfg.hooks) == 0 {
		return
	}
	o.hooked, o.slow = true, true
	info := o.info()
	for _, h := range o.p.cfg.hooks {
		if h.Before != nil {
			h.Before(&info)
		}
	}
}

// info describes the current attempt. Its Messages are a copy: the op's
// slice is reused after the send.
func (o *op) info() SendInfo {
	return SendInfo{Group: o.p.cfg.group, Mode: o.mode, Messages: slices.Clone(o.msgs), Attempt: o.attempt, Queue: o.q, Addr: o.addr}
}

// ctxErr returns the caller's context error, counting a deadline that has
// passed even if the context's own timer has not fired yet.
func (o *op) ctxErr() error {
	if err := o.ctx.Err(); err != nil {
		return err
	}
	if d, ok := o.ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// retryable reports whether another attempt may succeed after err.
func (o *op) retryable(err error) bool {
	if o.ctxErr() != nil {
		return false
	}
	var be *BrokerError
	if errors.As(err, &be) {
		return be.Retryable()
	}
	var re *routeError
	var ve *ValidationError
	return !errors.As(err, &re) && !errors.As(err, &ve) && !errors.Is(err, errBadSelection)
}

// failure is the error of a send whose attempts all failed. It does not
// refer to the op (which is reused).
func (o *op) failure() error {
	if len(o.errs) == 1 {
		return fmt.Errorf("producer: send to %s: %w", o.pr.topic, o.errs[0])
	}
	return fmt.Errorf("producer: send to %s failed %d times: %w", o.pr.topic, len(o.errs), attemptErrors(slices.Clone(o.errs)))
}

// attemptErrors are the errors of several attempts, in order.
type attemptErrors []error

// Error joins the attempts' errors with "; ".
func (e attemptErrors) Error() string {
	s := ""
	for i, err := range e {
		if i > 0 {
			s += "; "
		}
		s += err.Error()
	}
	return s
}

// Unwrap returns the attempts' errors, for errors.Is and errors.As.
func (e attemptErrors) Unwrap() []error { return e }

// routeError marks a failed route lookup: it already tried every name
// server, so the send is not retried.
type routeError struct{ err error }

func (e *routeError) Error() string { return e.err.Error() }
func (e *routeError) Unwrap() error { return e.err }
