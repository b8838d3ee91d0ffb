package console

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// FuzzPageQuery feeds any query string to every page: none may fail to
// render (500) or panic, whatever the parameters say.
func FuzzPageQuery(f *testing.F) {
	for _, s := range []string{"", "page=3", "q=%00", "name=topic-00001", "id=x&topic=orders", "topic=t&queue=-1&offset=9223372036854775807",
		"range=year", "range=nope", "page=-5&q=zz", "partial=1", "offset=abc", "flash=%3Cscript%3E"} {
		f.Add(s)
	}
	c, err := New(Options{Backend: newFake(false, 120)})
	if err != nil {
		f.Fatal(err)
	}
	w := httptest.NewRecorder()
	c.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	cookies := w.Result().Cookies()
	paths := []string{"/", "/stages", "/topics", "/topic", "/groups", "/group", "/messages", "/timers", "/cluster"}
	f.Fuzz(func(t *testing.T, query string) {
		for _, p := range paths {
			r, err := http.NewRequest("GET", "http://console"+p+"?"+query, nil)
			if err != nil {
				return
			}
			for _, k := range cookies {
				r.AddCookie(k)
			}
			w := httptest.NewRecorder()
			c.ServeHTTP(w, r)
			if w.Code >= 500 {
				t.Fatalf("%s?%s: %d %s", p, query, w.Code, w.Body.String())
			}
		}
	})
}
