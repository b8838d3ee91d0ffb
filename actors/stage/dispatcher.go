package stage

import "time"

// workerDispatcher runs a stage's mailbox (protoactor's processMessages)
// on a goroutine that waits for the next burst instead of exiting, so that
// a stage woken once per request does not start a goroutine each time and
// grow its stack again (protoactor's default dispatcher runs every burst
// on a new goroutine: with a stage like the commitlog writer woken per
// send, the stack copying alone was an eighth of the broker's CPU). The
// mailbox runs at most one burst at a time; a worker that stays idle for
// workerIdle exits, and the next burst starts a new one.
type workerDispatcher struct {
	work chan func()
}

// workerIdle is how long an idle worker waits for the next burst.
const workerIdle = 2 * time.Second

// dispatcherThroughput is the messages a burst handles before yielding
// the processor (protoactor's default).
const dispatcherThroughput = 300

func newWorkerDispatcher() *workerDispatcher {
	return &workerDispatcher{work: make(chan func())}
}

// Schedule implements actor.Dispatcher: a waiting worker takes fn, or a
// new worker starts with it.
func (d *workerDispatcher) Schedule(fn func()) {
	select {
	case d.work <- fn:
	default:
		go d.run(fn)
	}
}

// Throughput implements actor.Dispatcher.
func (d *workerDispatcher) Throughput() int { return dispatcherThroughput }

func (d *workerDispatcher) run(fn func()) {
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	for {
		fn()
		t.Reset(workerIdle)
		select {
		case fn = <-d.work:
		case <-t.C:
			return
		}
	}
}
