package dispatch

import (
	"fmt"
	"runtime/debug"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// checkpointDone reports a checkpoint the checkpointer finished (err nil:
// offset is persisted).
type checkpointDone struct {
	from   *checkpointer // stale when it is not the dispatcher's current one
	offset int64
	err    error
}

// checkpointerPanicked reports a panic the checkpointer recovered: the
// dispatcher that owns it fails with it (a stale one, from the checkpointer
// of an instance before a restart, is ignored).
type checkpointerPanicked struct {
	from   *checkpointer
	reason any
}

// checkpointer makes checkpoints off the dispatcher: a goroutine of the
// dispatcher's that fsyncs the consume queues (Queue.Sync may run alongside
// Append) and then persists the offset it was given, and reports back with
// a checkpointDone message. While the CommitLog is written heavily those
// fsyncs take tens to hundreds of milliseconds; done on the dispatcher they
// held every consumer's new messages back for as long. The dispatcher
// starts it in Started, hands it one offset at a time, and stops it (and
// waits for it) when it stops or restarts, whatever the cause (then
// checkpoints once more itself, unless the checkpointer panicked). A panic
// on the checkpointer does not kill the process: it recovers it, ends, and
// reports it with a checkpointerPanicked message; the dispatcher fails with
// it inside its actor, so that the supervisor restarts it and the new
// instance starts a new checkpointer.
type checkpointer struct {
	st   *storage.Store
	self *stage.Stage
	log  zerolog.Logger
	req  chan int64
	quit chan struct{}
	done chan struct{}
}

func startCheckpointer(st *storage.Store, self *stage.Stage, log zerolog.Logger) *checkpointer {
	c := &checkpointer{st: st, self: self, log: log, req: make(chan int64, 1),
		quit: make(chan struct{}), done: make(chan struct{})}
	go c.run()
	return c
}

func (c *checkpointer) run() {
	defer close(c.done)
	defer func() {
		if r := recover(); r != nil {
			c.log.Error().Str("reason", fmt.Sprint(r)).Str("stack", string(debug.Stack())).
				Msg("dispatch checkpointer panicked; restarting dispatch")
			c.self.Send(&checkpointerPanicked{from: c, reason: r})
		}
	}()
	for {
		select {
		case off := <-c.req:
			c.self.Send(&checkpointDone{from: c, offset: off, err: persist(c.st, off, c.log)})
		case <-c.quit:
			return
		}
	}
}

// persist fsyncs the consume queues, then records offset as the
// dispatcher's checkpoint: never ahead of durable units.
func persist(st *storage.Store, offset int64, log zerolog.Logger) error {
	if err := st.Queues.Sync(); err != nil {
		log.Error().Err(err).Msg("consume queue fsync failed; checkpoint not advanced")
		return err
	}
	if err := meta.UpdateCheckpoint(st.FS, st.CheckpointPath(), CheckpointKey, offset); err != nil {
		log.Error().Err(err).Msg("dispatch checkpoint write failed")
		return err
	}
	return nil
}

// request hands offset over; the caller makes sure none is in progress.
func (c *checkpointer) request(offset int64) { c.req <- offset }

// stop ends the goroutine and waits for it, so that no checkpoint runs
// after (nil: nothing to stop).
func (c *checkpointer) stop() {
	if c == nil {
		return
	}
	select {
	case <-c.quit:
	default:
		close(c.quit)
	}
	<-c.done
}
