package console

import (
	"bytes"
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// panicky is a backend whose overview panics once.
type panicky struct {
	*fake
	once sync.Once
}

func (p *panicky) Overview(ctx context.Context) (Overview, error) {
	p.once.Do(func() { panic("overview exploded") })
	return p.fake.Overview(ctx)
}

// A page that panics is that request's 500, counted and logged with its
// route; the console serves on, the same page included.
func TestPagePanicIs500(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	reg := prometheus.NewRegistry()
	c, err := New(Options{Backend: &panicky{fake: newFake(false, 3)}, Registerer: reg,
		Logger: zerolog.New(zerolog.SyncWriter(writerFunc(func(b []byte) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			return logs.Write(b)
		})))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	defer srv.Close()
	jar, _ := cookiejar.New(nil)
	cl := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	if code, body, _ := get(t, cl, srv.URL+"/"); code != http.StatusInternalServerError || !strings.Contains(body, "internal error") {
		t.Fatalf("the page that panicked: %d %q, want 500", code, body)
	}
	for _, page := range []string{"/", "/topics"} {
		if code, _, _ := get(t, cl, srv.URL+page); code != http.StatusOK {
			t.Fatalf("%s after the panic: %d, want 200", page, code)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got float64
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if mf.GetName() == "wheelmq_handler_panics_total" && len(m.GetLabel()) == 2 &&
				m.GetLabel()[0].GetValue() == "GET /{$}" && m.GetLabel()[1].GetValue() == "console" {
				got = m.GetCounter().GetValue()
			}
		}
	}
	if got != 1 {
		t.Fatalf("wheelmq_handler_panics_total{protocol=console,kind=GET /{$}} = %v, want 1 (%v)", got, mfs)
	}
	mu.Lock()
	out := logs.String()
	mu.Unlock()
	if !strings.Contains(out, "console GET /{$}") || !strings.Contains(out, "overview exploded") || !strings.Contains(out, "goroutine ") {
		t.Fatalf("the log line lacks the route, the value or the stack:\n%s", out)
	}
}

// writerFunc is an io.Writer from a function.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
