package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// The fake's dead letters, test sends and connections (console_test.go
// has the rest of it).

func (f *fake) DeadLetterQueues(context.Context, Credentials) ([]DeadLetterQueue, error) {
	return []DeadLetterQueue{{Topic: "%DLQ%billing", Group: "billing", Min: 0, Max: 3, Messages: 3}}, nil
}

func (f *fake) DeadLetters(_ context.Context, _ Credentials, topic string, below int64, n int) ([]DeadLetter, error) {
	if below < 0 {
		below = 3
	}
	var out []DeadLetter
	for off := below - 1; off >= 0 && len(out) < n; off-- {
		out = append(out, DeadLetter{Offset: off, MsgID: fmt.Sprintf("MSG%d", off), OffsetMsgID: "7F00000100002A9F000000000000000" + fmt.Sprint(off),
			OriginTopic: "orders", Keys: "k", ReconsumeTimes: 2, StoredAt: time.Now(), Size: 5, Preview: "<b>x</b>"})
	}
	return out, nil
}

func (f *fake) Resend(_ context.Context, _ Credentials, r ResendRequest) (Resent, error) {
	f.change(fmt.Sprintf("resend %s %d %d %s", r.Topic, r.Queue, r.Offset, r.To))
	return Resent{MsgID: "MSG", To: r.To, OffsetMsgID: "NEW"}, nil
}

func (f *fake) Resends(string) []Resent {
	return []Resent{{At: time.Now(), Who: "admin", From: "%DLQ%billing", MsgID: "MSG1", To: "%RETRY%billing"}}
}

func (f *fake) TestSend(_ context.Context, _ Credentials, m TestMessage) (Sent, error) {
	f.change(fmt.Sprintf("send %s %q %s %s %d", m.Topic, m.Body, m.Tags, m.Keys, m.DeliverAt.Unix()))
	return Sent{MsgID: "UNIQ1", OffsetMsgID: "OFF1"}, nil
}

func (f *fake) Connections(context.Context, Credentials) (Connections, error) {
	return Connections{Clients: []ClientConn{{ID: "c1", Protocol: "grpc", Addr: "127.0.0.1:1", Language: "GOLANG", Consumers: []string{"billing"}}},
		Groups: []GroupLag{{Group: "billing", ConsumeType: "POP", Protocols: "grpc", Online: 1, Lag: 4, InFlight: 2,
			Topics: []TopicLag{{Topic: "orders", Max: 10, Consumed: 6, Lag: 4, InFlight: 2}}}, {Group: "idle", Online: 1}}}, nil
}

// TestDeadLetterPagesRender: the dead-letter list and one DLQ's messages,
// the clients page and the topic's test-send form, in full and live.
func TestDeadLetterPagesRender(t *testing.T) {
	srv, cl := serve(t, newFake(false, 3))
	for p, want := range map[string][]string{
		"/deadletters":                        {`id="dlqs"`, `href="/deadletters?topic=%25DLQ%25billing"`},
		"/deadletters?topic=%25DLQ%25billing": {`id="dead-letters"`, "MSG2", "not removed", `value="origin"`, "&lt;b&gt;x&lt;/b&gt;", `id="resends"`},
		"/clients":                            {`id="group-lags"`, `data-protocol="grpc"`, `class="n inflight">2<`, "no topic"},
		"/topic?name=topic-00001":             {`action="/topics/send"`},
	} {
		code, body, _ := get(t, cl, srv.URL+p)
		if code != http.StatusOK || strings.Contains(body, `id="error"`) {
			t.Fatalf("%s: %d\n%s", p, code, body)
		}
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Fatalf("%s lacks %q", p, w)
			}
		}
		sep := map[bool]string{true: "&", false: "?"}[strings.Contains(p, "?")]
		if code, _, _ := get(t, cl, srv.URL+p+sep+"partial=1"); code != http.StatusOK {
			t.Fatalf("%s partial: %d", p, code)
		}
	}
}

// TestResendAndTestSend: the forms reach the backend with what was typed;
// bad input is refused before it.
func TestResendAndTestSend(t *testing.T) {
	f := newFake(false, 3)
	srv, cl := serve(t, f)
	_, body, _ := get(t, cl, srv.URL+"/topics")
	tok := csrfOf(t, body)
	for _, form := range []url.Values{
		{"topic": {"orders"}, "queue": {"0"}, "offset": {"1"}, "to": {"retry"}},         // not a DLQ
		{"topic": {"%DLQ%billing"}, "queue": {"x"}, "offset": {"1"}, "to": {"retry"}},   // bad queue
		{"topic": {"%DLQ%billing"}, "queue": {"0"}, "offset": {"one"}, "to": {"retry"}}, // bad offset
		{"topic": {"topic-00001"}, "body": {""}},                                        // empty body (test send)
		{"topic": {"bad topic"}, "body": {"x"}},                                         // bad topic
		{"topic": {"topic-00001"}, "body": {"x"}, "deliverAt": {"tomorrow"}},            // bad time
	} {
		form.Set("csrf", tok)
		path := "/deadletters/resend"
		if form.Has("body") {
			path = "/topics/send"
		}
		code, h := post(t, cl, srv.URL+path, form)
		if code != http.StatusSeeOther || !strings.Contains(h.Get("Location"), "flash=failed") {
			t.Fatalf("%s %v: %d %s", path, form, code, h.Get("Location"))
		}
	}
	if ch := f.changed(); len(ch) != 0 {
		t.Fatalf("refused forms changed %v", ch)
	}
	post(t, cl, srv.URL+"/deadletters/resend", url.Values{"csrf": {tok}, "topic": {"%DLQ%billing"}, "queue": {"0"}, "offset": {"2"}, "to": {"origin"}})
	_, h := post(t, cl, srv.URL+"/topics/send", url.Values{"csrf": {tok}, "topic": {"topic-00001"}, "body": {"hello"}, "tags": {"T"},
		"keys": {"K1 K2"}, "deliverAt": {"2030-01-02T03:04:05"}})
	if loc := h.Get("Location"); !strings.Contains(loc, "UNIQ1") {
		t.Fatalf("test send's flash: %s", loc)
	}
	want := []string{"resend %DLQ%billing 0 2 origin", fmt.Sprintf(`send topic-00001 "hello" T K1 K2 %d`, time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC).Unix())}
	if got := f.changed(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("changes %q, want %q", got, want)
	}
}
