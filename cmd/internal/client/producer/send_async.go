package producer

import "time"

// The async half of a send (SendAsync): its attempts run on the caller
// until one is under way, then on the producer's workers, which retry or
// run the callback (see send.go for the op and its attempts).

// stepAsync runs attempts of an async send until one is under way (its
// answer goes to a worker) or the send is over. onWorker says whether it
// runs on a worker (else on the caller of SendAsync).
func (o *op) stepAsync(onWorker bool) {
	for o.attempt < 1+o.p.cfg.retries {
		o.attempt++
		c, req, err := o.begin()
		if err == nil {
			err = c.GoTransient(req, o.remaining(), o.onAnswer)
			if err == nil {
				return
			}
		}
		_, err = o.finishAttempt(nil, err)
		o.errs = append(o.errs, err)
		if !o.retryable(err) {
			break
		}
		if f, stale := o.staleRoute(err); stale && o.attempt < 1+o.p.cfg.retries {
			o.awaitRouteAsync(f, time.Now().Add(o.p.cfg.sendTimeout))
			return
		}
	}
	o.finish(nil, o.failure(), onWorker)
}

// completeAsync handles the answer to an async attempt, on a worker.
func (o *op) completeAsync() {
	res, err := o.finishAttempt(o.ansRes, o.ansErr)
	if err == nil {
		o.finish(res, nil, true)
		return
	}
	o.errs = append(o.errs, err)
	if o.retryable(err) && o.attempt < 1+o.p.cfg.retries {
		if f, stale := o.staleRoute(err); stale {
			// The op keeps its permit, so the queue has room for the post.
			o.awaitRouteAsync(f, time.Now().Add(o.p.cfg.sendTimeout))
			return
		}
		if d := o.backoff(err); d > 0 {
			// The op keeps its permit, so the queue has room for this post.
			time.AfterFunc(d, func() { o.p.post(completion{op: o, retry: true}) })
			return
		}
		o.stepAsync(true)
		return
	}
	o.finish(nil, o.failure(), true)
}

// finish ends an async send: its callback runs on a worker.
func (o *op) finish(res *SendResult, err error, onWorker bool) {
	if onWorker {
		o.callback(res, err)
		return
	}
	o.p.post(completion{op: o, done: true, res: res, err: err})
}

// callback releases the send's permit, frees the op and runs the caller's
// callback; a panic in it is logged and does not stop the worker.
func (o *op) callback(res *SendResult, err error) {
	p, cb, topic := o.p, o.cb, o.pr.topic
	p.limit.release(o.permit)
	o.free()
	defer p.active.Done()
	defer func() {
		if r := recover(); r != nil {
			p.log.Error().Interface("panic", r).Str("topic", topic).Msg("producer: async send callback panicked")
		}
	}()
	cb(res, err)
}
