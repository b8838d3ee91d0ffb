package console

import (
	"net/http"

	"github.com/wheelmq/wheelmq/actors/recovery"
)

// Failure stays local: a panic in a page or an action is that request's
// 500, a count in wheelmq_handler_panics_total{protocol="console",kind=<route>}
// and one error line with the route and the stack; the console serves on
// (net/http's own recovery would drop the connection without an answer).

// answerWriter notes whether an answer was started, so that a panic after
// it is not answered twice.
type answerWriter struct {
	http.ResponseWriter
	started bool
}

// WriteHeader implements http.ResponseWriter.
func (a *answerWriter) WriteHeader(code int) {
	a.started = true
	a.ResponseWriter.WriteHeader(code)
}

// Write implements http.ResponseWriter.
func (a *answerWriter) Write(b []byte) (int, error) {
	a.started = true
	return a.ResponseWriter.Write(b)
}

// Unwrap gives http.ResponseController the underlying writer.
func (a *answerWriter) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// serveRecovered runs h for r; a panic in it is answered 500, counted and
// logged.
func (c *Console) serveRecovered(h http.Handler, w http.ResponseWriter, r *http.Request) {
	aw := &answerWriter{ResponseWriter: w}
	defer func() {
		p := recovery.Recovered(recover())
		if p == nil {
			return
		}
		if p.Value == http.ErrAbortHandler {
			panic(p.Value) // net/http's own way to abort a response
		}
		kind := r.Pattern // the route that matched; bounded, unlike the path
		if kind == "" {
			kind = "other"
		}
		c.panics.WithLabelValues("console", kind).Inc()
		recovery.Log(c.log.With().Str("remote", r.RemoteAddr).Logger(), p, "console "+kind)
		if !aw.started {
			http.Error(w, "internal error: the console failed on this request; see the broker's log", http.StatusInternalServerError)
		}
	}()
	h.ServeHTTP(aw, r)
}
