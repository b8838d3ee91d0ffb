package suggest

import "testing"

func TestClosest(t *testing.T) {
	cands := []string{"flush", "data", "listen", "broker-name", "brokerName", "namesrv", "tls"}
	cases := []struct{ in, want string }{
		{"flsuh", "flush"},  // a swap
		{"flushh", "flush"}, // an insertion
		{"brokername", "brokerName"},
		{"broker_name", "broker-name"},
		{"lisen", "listen"},
		{"dta", "data"},
		{"tsl", "tls"},
		{"compression", ""}, // nothing close
		{"x", ""},
	}
	for _, c := range cases {
		if got := Closest(c.in, cands); got != c.want {
			t.Errorf("Closest(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := DidYouMean("flsuh", cands, "--"); got != "; did you mean --flush?" {
		t.Errorf("DidYouMean: %q", got)
	}
	if got := DidYouMean("zzzzzz", cands, ""); got != "" {
		t.Errorf("DidYouMean with nothing close: %q", got)
	}
}
