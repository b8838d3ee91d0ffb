package router

import (
	"slices"
	"testing"
)

// TestLiteConnsLatestConnection: a client's lite subscriptions go with
// the connection it last subscribed on, not with an older one it left.
func TestLiteConnsLatestConnection(t *testing.T) {
	var l liteConns
	l.add(1, "g", "c1")
	l.add(1, "g", "c2")
	l.add(2, "g", "c1") // c1 came back on connection 2
	got := l.take(1)
	if !slices.Equal(got, [][2]string{{"g", "c2"}}) {
		t.Fatalf("closing connection 1 drops %v, want only c2 (c1 moved to 2)", got)
	}
	if got := l.take(2); !slices.Equal(got, [][2]string{{"g", "c1"}}) {
		t.Fatalf("closing connection 2 drops %v, want c1", got)
	}
	if got := l.take(2); len(got) != 0 {
		t.Fatalf("a second close drops %v", got)
	}
}
