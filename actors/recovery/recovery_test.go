package recovery

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func TestCatch(t *testing.T) {
	if p := Catch(func() {}); p != nil {
		t.Fatalf("no panic: got %v", p)
	}
	p := Catch(func() { panic("boom") })
	if p == nil || p.Value != "boom" || !strings.Contains(string(p.Stack), "TestCatch") {
		t.Fatalf("panic: got %+v", p)
	}
	sentinel := errors.New("sentinel")
	if p := Catch(func() { panic(sentinel) }); !errors.Is(p, sentinel) {
		t.Fatalf("an error's panic unwraps to it: got %v", p)
	}
	var m map[string]int
	if p := Catch(func() { m["x"] = 1 }); p == nil || !strings.Contains(p.Error(), "nil map") {
		t.Fatalf("runtime panic: got %v", p)
	}
}

func TestCounterSharedPerRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, b := Counter(reg), Counter(reg)
	a.WithLabelValues("remoting", "10").Inc()
	b.WithLabelValues("remoting", "10").Inc()
	var m dto.Metric
	if err := a.WithLabelValues("remoting", "10").Write(&m); err != nil || m.GetCounter().GetValue() != 2 {
		t.Fatalf("two entry points on one registry share the counter: got %v (%v), want 2", m.GetCounter().GetValue(), err)
	}
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 || mfs[0].GetName() != "wheelmq_handler_panics_total" || len(mfs[0].GetMetric()) != 1 {
		t.Fatalf("gathered %v (%v), want one series of wheelmq_handler_panics_total", mfs, err)
	}
	Counter(nil).WithLabelValues("grpc", "x").Inc() // unexported, usable
}

func TestGoReports(t *testing.T) {
	var wg sync.WaitGroup
	got := make(chan *Panic, 1)
	Go(&wg, func(p *Panic) { got <- p }, func() { panic("loop") })
	wg.Wait()
	select {
	case p := <-got:
		if p.Value != "loop" {
			t.Fatalf("reported %v", p.Value)
		}
	default:
		t.Fatal("the panic was not reported before the wait group was released")
	}
}

func TestSuperviseRestartsUntilStop(t *testing.T) {
	var wg sync.WaitGroup
	stop := make(chan struct{})
	runs, reports := 0, 0
	Supervise(&wg, stop, time.Millisecond, func(*Panic) { reports++ }, func() {
		runs++
		if runs < 3 {
			panic("again")
		}
	})
	wg.Wait() // the third run returns: the loop is done
	if runs != 3 || reports != 2 {
		t.Fatalf("runs %d, reports %d; want 3 and 2", runs, reports)
	}
	// A loop that always panics ends when stop closes.
	Supervise(&wg, stop, time.Hour, nil, func() { panic("forever") })
	close(stop)
	wg.Wait()
}
