package console

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The fake's lite topics (console_test.go has the rest of it).
func (f *fake) LiteTopics(_ context.Context, _ Credentials, top int) ([]LiteParent, error) {
	p := LiteParent{Topic: "chats", Resident: 3, Holding: 2, Subscribed: 1, Messages: 7, InFlight: 1, Complete: true, Scanned: 3,
		Groups: []LiteGroup{{Group: "bots", Clients: 2, Subscriptions: 5, Backlog: 6, InFlight: 1}},
		Top: []LiteTopic{{Lite: "s<1>", Messages: 5, InFlight: 1, Subscribers: 1, LastWrite: time.Now()},
			{Lite: "s2", Messages: 2, LastWrite: time.Now()}}}
	if top < len(p.Top) {
		p.Top = p.Top[:top]
	}
	return []LiteParent{p, {Topic: "idle", Complete: false, Scanned: 10}}, nil
}

// TestLitePageRenders: the lite page shows each LITE parent's counts,
// its groups and its largest backlogs, names escaped, a cut walk said,
// in full and live.
func TestLitePageRenders(t *testing.T) {
	srv, cl := serve(t, newFake(false, 1))
	code, body, _ := get(t, cl, srv.URL+"/lite")
	if code != http.StatusOK || strings.Contains(body, `id="error"`) {
		t.Fatalf("/lite: %d\n%s", code, body)
	}
	for _, w := range []string{`data-topic="chats"`, `class="n resident">3<`, `class="n holding">2<`, `class="n messages">7<`,
		`data-group="bots"`, `class="n subscriptions">5<`, `class="n backlog">6<`, `data-lite="s&lt;1&gt;"`,
		`data-topic="idle"`, "Counted over the first 10 lite topics", "No lite topic holds a message", `href="/lite" class="on"`} {
		if !strings.Contains(body, w) {
			t.Fatalf("/lite lacks %q\n%s", w, body)
		}
	}
	if code, live, _ := get(t, cl, srv.URL+"/lite?partial=1"); code != http.StatusOK || !strings.Contains(live, `data-lite="s2"`) {
		t.Fatalf("/lite partial: %d\n%s", code, live)
	}
}
