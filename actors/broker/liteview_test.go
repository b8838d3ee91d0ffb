package broker

import (
	"slices"
	"testing"
)

// TestPushTopKeepsTheLargest: pushTop keeps the n lite topics holding the
// most messages, most first, ties by name, whatever the order they come.
func TestPushTopKeepsTheLargest(t *testing.T) {
	var top []LiteTopicView
	for _, t := range []LiteTopicView{{Lite: "a", Messages: 1}, {Lite: "b", Messages: 5}, {Lite: "c", Messages: 3},
		{Lite: "d", Messages: 5}, {Lite: "e", Messages: 2}, {Lite: "f", Messages: 4}} {
		top = pushTop(top, t, 3)
	}
	var got []string
	for _, v := range top {
		got = append(got, v.Lite)
	}
	if want := []string{"b", "d", "f"}; !slices.Equal(got, want) {
		t.Fatalf("top 3 %v, want %v", got, want)
	}
}
