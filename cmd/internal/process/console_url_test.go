package process

import "testing"

// TestConsoleURL: the start log's console URL is one a browser opens.
func TestConsoleURL(t *testing.T) {
	cases := []struct {
		addr    string
		tlsOnly bool
		want    string
	}{
		{"127.0.0.1:9108", false, "http://127.0.0.1:9108/"},
		{"0.0.0.0:9108", false, "http://127.0.0.1:9108/"},
		{"[::]:9108", true, "https://[::1]:9108/"},
		{"10.0.0.5:9108", true, "https://10.0.0.5:9108/"},
	}
	for _, c := range cases {
		if got := consoleURL(c.addr, c.tlsOnly); got != c.want {
			t.Errorf("consoleURL(%q, %v) = %q, want %q", c.addr, c.tlsOnly, got, c.want)
		}
	}
}
