package console

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// benchPage renders one page (the whole handler: session, backend,
// paging, template) with 10,000 topics and 10 million pending timers in
// the fake backend.
func benchPage(b *testing.B, path string) {
	c, err := New(Options{Backend: newFake(false, 10_000)})
	if err != nil {
		b.Fatal(err)
	}
	// One request to get a session cookie.
	w := httptest.NewRecorder()
	c.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	ck := w.Result().Cookies()
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest("GET", path, nil)
		for _, k := range ck {
			r.AddCookie(k)
		}
		w := httptest.NewRecorder()
		c.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("%s: %d", path, w.Code)
		}
	}
}

// BenchmarkTopicsPage10k: the topics page (sorted, paged) of 10,000.
func BenchmarkTopicsPage10k(b *testing.B) { benchPage(b, "/topics?page=100") }

// BenchmarkTopicsSearch10k: a search over 10,000 topics.
func BenchmarkTopicsSearch10k(b *testing.B) { benchPage(b, "/topics?q=0999") }

// BenchmarkTimersPageYear: the timer page's year view (the histogram
// itself is timerwheel's BenchmarkPendingHistogram10M).
func BenchmarkTimersPageYear(b *testing.B) { benchPage(b, "/timers?range=year") }

// BenchmarkStagesPage: the stages page with its pipeline drawing.
func BenchmarkStagesPage(b *testing.B) { benchPage(b, "/stages") }
