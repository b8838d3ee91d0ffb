package writer

// Replication (docs/replication, issue 17): with Options.Role set the
// writer takes sends only while the broker is its group's unfenced master,
// promoted at the current epoch (Promote), and with enough in-sync
// replicas; with Options.Confirmer set a stored send is answered only once
// the Confirmer says every sync-state-set member holds the batch's end
// (after the local flush rule: at once in async flush, after the batch's
// fsync in sync flush). One WaitConfirmed per batch, never per message.
//
//	refused before appending (nothing stored):
//	  not master / replica / promotion not done -> ErrNotMaster
//	  fenced master                             -> ErrFenced
//	  SSS smaller than MinInSync                -> ErrInSyncReplicas
//	stored, then:
//	  done(true)                -> SEND_OK
//	  done(false) or deadline   -> ErrNotConfirmed (netloop/router: 12 FLUSH_SLAVE_TIMEOUT)

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/wheelmq/wheelmq/actors/role"
)

// Confirmer tells when the CommitLog up to an offset is held by every
// member of the sync-state set (actors/replication.Service implements it).
type Confirmer interface {
	// WaitConfirmed calls done(true) once everything below end is
	// confirmed, done(false) when it will not be (the broker stopped being
	// an unfenced master, or the sync-state set shrank below the minimum).
	// done may be called on any goroutine, even before WaitConfirmed
	// returns, and exactly once.
	WaitConfirmed(end int64, done func(ok bool))
}

// Errors a role-aware writer answers with (netloop/router maps them to
// RocketMQ's response codes).
var (
	// ErrNotMaster refuses a send on a broker that is not its group's
	// master (a replica, a master whose promotion is not finished).
	ErrNotMaster = errors.New("the broker is not its group's master (role slave): messages are put to the master")
	// ErrFenced refuses a send on a master that could not renew its lease.
	ErrFenced = errors.New("the master is fenced (its controller lease is not renewed): messages are not taken")
	// ErrInSyncReplicas refuses a send while the sync-state set is smaller
	// than Options.MinInSync (RocketMQ's IN_SYNC_REPLICAS_NOT_ENOUGH).
	ErrInSyncReplicas = errors.New("in-sync replicas not enough")
	// ErrNotConfirmed answers a stored send its replicas did not confirm
	// (in time, or at all): the message is in the master's CommitLog but
	// may be lost on a failover.
	ErrNotConfirmed = errors.New("replicas did not confirm the message")
)

// defaultConfirmTimeout bounds the wait for a confirmation: the clients'
// default send timeout.
const defaultConfirmTimeout = 3 * time.Second

// Promote tells the writer that the broker became master at Epoch and
// that the CommitLog was cut to its last whole record: it rebuilds its
// queue-offset table from the log (the records a replica received were
// not written by it) and takes sends at that epoch from then on. Done is
// called on the writer's goroutine and must not block.
type Promote struct {
	Epoch int64
	Done  func(error)
}

// Fail implements stage.Failable.
func (p *Promote) Fail(err error) {
	if p.Done != nil {
		p.Done(err)
	}
}

// promotion is the epoch the writer was promoted at: kept by the
// producer, so that a restarted writer (its queue offsets rebuilt at
// Started) still takes sends at that epoch.
type promotion struct {
	epoch atomic.Int64 // epoch+1; 0: never promoted
}

func (p *promotion) set(epoch int64) { p.epoch.Store(epoch + 1) }

func (p *promotion) at(epoch int64) bool { return p.epoch.Load() == epoch+1 }

// held is a stored send waiting for its confirmation.
type held struct {
	a   *Append
	res Result
}

// waiting is one batch's wait for its confirmation.
type waiting struct {
	id       uint64
	end      int64
	deadline time.Time
	items    []held
}

// confirmed is sent by the Confirmer's done callback.
type confirmed struct {
	from *Writer // the instance that asked: a restart answered its waits
	id   uint64
	ok   bool
}

// confirmTick is the deadline timer's message.
type confirmTick struct{ from *Writer }

// refusal returns why new sends are refused now (nil: taken).
func (w *Writer) refusal() error {
	if w.opts.Role == nil {
		return nil
	}
	st := w.opts.Role.Get()
	switch {
	case st.Kind == role.Standalone:
		return nil
	case st.Kind == role.Master && st.Fenced:
		return ErrFenced
	case !st.IsMaster():
		return ErrNotMaster
	case !w.promotion.at(st.Epoch):
		return fmt.Errorf("%w (promotion to epoch %d under way)", ErrNotMaster, st.Epoch)
	case w.opts.MinInSync > 0 && len(st.SyncStateSet) < w.opts.MinInSync:
		return ErrInSyncReplicas
	}
	return nil
}

// hold keeps the stored append of s for its batch's confirmation.
func (w *Writer) hold(s *slot) {
	w.held = append(w.held, held{a: s.a, res: s.res})
	*s = slot{}
}

// waitHeld asks the Confirmer for the batch's end once per batch.
func (w *Writer) waitHeld() {
	if len(w.held) == 0 {
		return
	}
	w.waitID++
	wt := &waiting{id: w.waitID, end: w.opts.Store.CommitLog.MaxOffset(),
		deadline: time.Now().Add(w.opts.ConfirmTimeout), items: w.held}
	w.held = nil
	w.waits = append(w.waits, wt)
	if len(w.waits) == 1 {
		w.ctimer.Arm(w.opts.ConfirmTimeout, confirmTick{from: w})
	}
	self, id, from := w.self, wt.id, w
	w.opts.Confirmer.WaitConfirmed(wt.end, func(ok bool) { self.Send(&confirmed{from: from, id: id, ok: ok}) })
}

// onConfirmed answers the batch m names: ok answers it and every batch
// before it (the confirmed offset only grows) with their results; !ok
// answers it with ErrNotConfirmed.
func (w *Writer) onConfirmed(m *confirmed) {
	if m.from != w {
		return
	}
	defer w.flushOut()
	if !m.ok {
		for i, wt := range w.waits {
			if wt.id == m.id {
				w.answerWait(wt, ErrNotConfirmed)
				w.waits = append(w.waits[:i], w.waits[i+1:]...)
				break
			}
		}
		w.rearm()
		return
	}
	n := 0
	for n < len(w.waits) && w.waits[n].id <= m.id {
		w.answerWait(w.waits[n], nil)
		n++
	}
	w.waits = append(w.waits[:0], w.waits[n:]...)
	w.rearm()
	if w.opts.OnConfirmed != nil {
		w.opts.OnConfirmed()
	}
}

// onConfirmTick answers the batches past their deadline with
// ErrNotConfirmed.
func (w *Writer) onConfirmTick(m confirmTick) {
	if m.from != w {
		return
	}
	defer w.flushOut()
	now := time.Now()
	n := 0
	for n < len(w.waits) && !w.waits[n].deadline.After(now) {
		w.opts.Logger.Warn().Int64("end", w.waits[n].end).Int("sends", len(w.waits[n].items)).
			Dur("waited", w.opts.ConfirmTimeout).Msg("replicas did not confirm a batch in time: answered FLUSH_SLAVE_TIMEOUT")
		w.answerWait(w.waits[n], fmt.Errorf("%w within %s", ErrNotConfirmed, w.opts.ConfirmTimeout))
		n++
	}
	w.waits = append(w.waits[:0], w.waits[n:]...)
	w.rearm()
}

// failWaits answers every batch still waiting (the writer stops or
// restarts: a later confirmation would reach no one).
func (w *Writer) failWaits(why string) {
	defer w.flushOut()
	for _, h := range w.held {
		w.replyHeld(h, fmt.Errorf("%w: %s", ErrNotConfirmed, why))
	}
	w.held = nil
	for _, wt := range w.waits {
		w.answerWait(wt, fmt.Errorf("%w: %s", ErrNotConfirmed, why))
	}
	w.waits = nil
	if w.ctimer != nil {
		w.ctimer.Stop()
	}
}

func (w *Writer) rearm() {
	if len(w.waits) == 0 {
		w.ctimer.Stop()
		return
	}
	w.ctimer.Arm(max(time.Until(w.waits[0].deadline), time.Millisecond), confirmTick{from: w})
}

func (w *Writer) answerWait(wt *waiting, err error) {
	for _, h := range wt.items {
		w.replyHeld(h, err)
	}
	clear(wt.items)
}

func (w *Writer) replyHeld(h held, err error) {
	res := h.res
	if err != nil {
		res = Result{Err: err}
	}
	res.Out = w.out
	h.a.Reply(res)
}

// promote serves a Promote.
func (w *Writer) promote(m *Promote) {
	err := w.rebuild()
	if err == nil {
		w.promotion.set(m.Epoch)
		w.opts.Logger.Info().Int64("epoch", m.Epoch).Int("queues", len(w.next)).
			Int64("commitlog_end", w.opts.Store.CommitLog.MaxOffset()).Msg("writer promoted: queue offsets rebuilt from the log, taking sends")
	}
	if m.Done != nil {
		m.Done(err)
	}
}
