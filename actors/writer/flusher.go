package writer

import (
	"fmt"
	"runtime/debug"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/storage/commitlog"
)

// flusher is the async-flush fsync: a goroutine of the writer's that
// fsyncs the CommitLog every FlushInterval while the writer goes on
// appending (CommitLog.Sync may run alongside Append). A failed fsync
// leaves the log in its sticky failed state; the flusher then tells the
// writer (onFailed), which restarts to reopen it. A panic on the flusher
// does not kill the process: the flusher recovers it, ends, and hands it
// to the writer (onPanic), which fails with it inside its actor, so that
// the supervisor restarts the writer and the new instance starts a new
// flusher. The writer starts it in Started and stops it (and waits for it)
// when it stops or restarts, whatever the cause.
type flusher struct {
	cl       *commitlog.CommitLog
	every    time.Duration
	onSync   func()
	onFailed func()
	onPanic  func(reason any)
	log      zerolog.Logger
	quit     chan struct{}
	done     chan struct{}
}

// flusherPanicked is sent by a flusher that recovered a panic: the writer
// that owns it fails with it (a stale one, from a flusher of an earlier
// instance, is ignored).
type flusherPanicked struct {
	from   *flusher
	reason any
}

func startFlusher(o Options, onFailed func(), onPanic func(f *flusher, reason any)) *flusher {
	f := &flusher{cl: o.Store.CommitLog, every: o.FlushInterval, onSync: o.OnSync, onFailed: onFailed,
		log: o.Logger, quit: make(chan struct{}), done: make(chan struct{})}
	f.onPanic = func(reason any) { onPanic(f, reason) }
	go f.run()
	return f
}

func (f *flusher) run() {
	defer close(f.done)
	defer func() {
		if r := recover(); r != nil {
			f.log.Error().Str("reason", fmt.Sprint(r)).Str("stack", string(debug.Stack())).
				Msg("commitlog flusher panicked; restarting the writer")
			f.onPanic(r)
		}
	}()
	t := time.NewTicker(f.every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if !f.sync() {
				return // the writer restarts and starts a new flusher
			}
		case <-f.quit:
			return
		}
	}
}

// sync fsyncs once; it reports false after a failure.
func (f *flusher) sync() bool {
	err := f.cl.Sync()
	if f.onSync != nil {
		f.onSync()
	}
	if err != nil {
		f.log.Error().Err(err).Msg("periodic commitlog fsync failed")
		f.onFailed()
		return false
	}
	return true
}

// stop ends the goroutine and waits for it (nil: nothing to stop; one that
// ended on its own, after a failure or a panic, is waited for at once).
func (f *flusher) stop() {
	if f == nil {
		return
	}
	select {
	case <-f.quit:
	default:
		close(f.quit)
	}
	<-f.done
}
