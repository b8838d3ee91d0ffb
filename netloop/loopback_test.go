package netloop

import "testing"

func TestLoopbackListen(t *testing.T) {
	for listen, want := range map[string]bool{
		"127.0.0.1:9876": true, "127.3.2.1:1": true, "[::1]:8081": true, "localhost:9108": true,
		"0.0.0.0:9876": false, ":9876": false, "[::]:1": false, "10.0.0.1:1": false, "": false, "127.0.0.1": false,
	} {
		if got := LoopbackListen(listen); got != want {
			t.Errorf("LoopbackListen(%q) = %v, want %v", listen, got, want)
		}
	}
}
