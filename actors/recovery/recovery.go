// Package recovery keeps a failure local: an entry point (a remoting
// handler, a gRPC handler, a console handler) or a goroutine of a
// registered owner runs its work through Catch, and a panic becomes a
// *Panic its owner answers or reports — an error answer for that one
// request, a count in wheelmq_handler_panics_total and one log line with
// the request kind and the stack — instead of the end of the process.
//
// It is a leaf package (no other wheelmq import), so every layer may use
// it: the stages, the codecs of netloop, the console of cmd.
package recovery

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Panic is a recovered panic: the value passed to panic and the stack of
// the goroutine that panicked, taken where it was recovered.
type Panic struct {
	Value any
	Stack []byte
}

// Error implements error.
func (p *Panic) Error() string { return fmt.Sprintf("panic: %v", p.Value) }

// Unwrap returns the panic value when it is an error.
func (p *Panic) Unwrap() error {
	if err, ok := p.Value.(error); ok {
		return err
	}
	return nil
}

// Catch runs f and returns the panic it raised (nil: it returned). A
// runtime.Goexit in f is not a panic and is not stopped.
func Catch(f func()) (p *Panic) {
	defer func() {
		if v := recover(); v != nil {
			p = &Panic{Value: v, Stack: debug.Stack()}
		}
	}()
	f()
	return nil
}

// Log writes p as one error line: the kind of work that panicked (a
// request kind, a goroutine's name), the panic value and the stack.
func Log(log zerolog.Logger, p *Panic, kind string) {
	log.Error().Str("kind", kind).Str("panic", fmt.Sprint(p.Value)).Str("stack", string(p.Stack)).
		Msg("panic recovered")
}

// Counter returns wheelmq_handler_panics_total{protocol,kind} on reg: the
// panics recovered at entry points, by protocol (remoting, grpc, console,
// internal for owners' goroutines) and request kind. It is registered once
// per registry; every entry point that counts into reg shares it. A nil
// reg gives a counter that is not exported.
func Counter(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "wheelmq_handler_panics_total",
		Help: "Panics recovered at an entry point (answered as an error for that request) or in an owner's goroutine, by protocol and request kind.",
	}, []string{"protocol", "kind"})
	if reg == nil {
		return c
	}
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
				return existing
			}
		}
		// A collector of that name but another shape: count unexported
		// rather than fail the entry point that asked.
		return c
	}
	return c
}

// Go runs f on a new goroutine counted in wg (nil: not counted); a panic
// in f is recovered and handed to report (nil: dropped) on that goroutine
// before wg is released. It is how a registered owner starts a goroutine
// it waits for on shutdown.
func Go(wg *sync.WaitGroup, report func(*Panic), f func()) {
	if wg != nil {
		wg.Add(1)
	}
	go func() {
		if wg != nil {
			defer wg.Done()
		}
		if p := Catch(f); p != nil && report != nil {
			report(p)
		}
	}()
}

// Recovered wraps v, a value recover returned, with the current stack
// (nil for nil: nothing panicked). For a deferred recover where Catch's
// closure would cost an allocation on a hot path.
func Recovered(v any) *Panic {
	if v == nil {
		return nil
	}
	return &Panic{Value: v, Stack: debug.Stack()}
}

// Supervise runs loop on a new goroutine counted in wg (nil: not
// counted) and restarts it after a panic, which it hands to report (nil:
// dropped), once pause has passed, until stop is closed. It ends when loop
// returns: a loop returns when its owner stops it. For the long-lived
// loops of an owner (heartbeats, refreshes, pollers) whose absence would
// go unnoticed.
func Supervise(wg *sync.WaitGroup, stop <-chan struct{}, pause time.Duration, report func(*Panic), loop func()) {
	Go(wg, nil, func() {
		for {
			p := Catch(loop)
			if p == nil {
				return
			}
			if report != nil {
				report(p)
			}
			t := time.NewTimer(pause)
			select {
			case <-stop:
				t.Stop()
				return
			case <-t.C:
			}
		}
	})
}
