package writer

import (
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/storage/commitlog"
)

// flusher is the async-flush fsync: a goroutine of the writer's that
// fsyncs the CommitLog every FlushInterval while the writer goes on
// appending (CommitLog.Sync may run alongside Append). A failed fsync
// leaves the log in its sticky failed state; the flusher then tells the
// writer (onFailed), which restarts to reopen it. The writer starts it in
// Started and stops it when it stops or restarts.
type flusher struct {
	cl       *commitlog.CommitLog
	every    time.Duration
	onSync   func()
	onFailed func()
	log      zerolog.Logger
	quit     chan struct{}
	done     chan struct{}
}

func startFlusher(o Options, onFailed func()) *flusher {
	f := &flusher{cl: o.Store.CommitLog, every: o.FlushInterval, onSync: o.OnSync, onFailed: onFailed,
		log: o.Logger, quit: make(chan struct{}), done: make(chan struct{})}
	go f.run()
	return f
}

func (f *flusher) run() {
	defer close(f.done)
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

// stop ends the goroutine and waits for it (nil: nothing to stop).
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
