package console

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// deadLetterPage is the rows per page of a DLQ's messages.
const deadLetterPage = 20

// deadLettersData is the dead-letter page: the DLQs, and one DLQ's
// messages when asked.
type deadLettersData struct {
	Queues   []DeadLetterQueue
	Topic    string // the DLQ shown ("": none)
	Queue    DeadLetterQueue
	Messages []DeadLetter
	NextURL  string // older messages
	NewerURL string // back to the newest
	Resends  []Resent
}

func (c *Console) deadLettersPage(ctx context.Context, r *http.Request, ss session, v *view) error {
	v.Title, v.Page = "Dead letters", "deadletters"
	d := &deadLettersData{Topic: r.URL.Query().Get("topic")}
	v.Data = d
	var err error
	if d.Queues, err = c.b.DeadLetterQueues(ctx, ss.creds); err != nil {
		return err
	}
	if d.Topic == "" {
		return nil
	}
	v.Title = "Dead letters of " + strings.TrimPrefix(d.Topic, "%DLQ%")
	for _, q := range d.Queues {
		if q.Topic == d.Topic {
			d.Queue = q
		}
	}
	below := int64(-1)
	if s := r.URL.Query().Get("below"); s != "" {
		if below, err = strconv.ParseInt(s, 10, 64); err != nil {
			return errorf("below %q: not a number", s)
		}
		d.NewerURL = "/deadletters?topic=" + urlQuery(d.Topic)
	}
	d.Resends = c.b.Resends(d.Topic)
	if d.Messages, err = c.b.DeadLetters(ctx, ss.creds, d.Topic, below, deadLetterPage); err != nil {
		return err
	}
	if n := len(d.Messages); n == deadLetterPage && d.Messages[n-1].Offset > d.Queue.Min {
		d.NextURL = "/deadletters?topic=" + urlQuery(d.Topic) + "&below=" + strconv.FormatInt(d.Messages[n-1].Offset, 10)
	}
	return nil
}

func (c *Console) resendDeadLetter(ctx context.Context, r *http.Request, ss session) (string, string, error) {
	f := r.PostForm
	rq := ResendRequest{Topic: f.Get("topic"), To: f.Get("to")}
	back := "/deadletters?topic=" + urlQuery(rq.Topic)
	if !strings.HasPrefix(rq.Topic, "%DLQ%") {
		return "/deadletters", "", errorf("%q is not a dead-letter topic", rq.Topic)
	}
	var err error
	if rq.Queue, err = strconv.Atoi(f.Get("queue")); err != nil {
		return back, "", errorf("queue %q: not a number", f.Get("queue"))
	}
	if rq.Offset, err = strconv.ParseInt(f.Get("offset"), 10, 64); err != nil {
		return back, "", errorf("offset %q: not a number", f.Get("offset"))
	}
	res, err := c.b.Resend(ctx, ss.creds, rq)
	if err != nil {
		return back, "", err
	}
	return back, "message " + res.MsgID + " resent to " + res.To + " as " + res.OffsetMsgID + " (it stays in the DLQ)", nil
}

// maxTestBody bounds a test message's body (the form's limit).
const maxTestBody = 32 << 10

func (c *Console) testSend(ctx context.Context, r *http.Request, ss session) (string, string, error) {
	f := r.PostForm
	m := TestMessage{Topic: f.Get("topic"), Body: f.Get("body"), Tags: strings.TrimSpace(f.Get("tags")), Keys: strings.TrimSpace(f.Get("keys"))}
	back := "/topic?name=" + urlQuery(m.Topic)
	if err := validTopic(m.Topic); err != nil {
		return "/topics", "", err
	}
	if m.Body == "" || len(m.Body) > maxTestBody {
		return back, "", errorf("the body must be 1 to %d bytes", maxTestBody)
	}
	if at := strings.TrimSpace(f.Get("deliverAt")); at != "" {
		t, err := time.ParseInLocation("2006-01-02T15:04", at, time.UTC)
		if err != nil {
			t, err = time.ParseInLocation("2006-01-02T15:04:05", at, time.UTC)
		}
		if err != nil {
			return back, "", errorf("delivery time %q: want YYYY-MM-DDTHH:MM (UTC)", at)
		}
		m.DeliverAt = t
	}
	s, err := c.b.TestSend(ctx, ss.creds, m)
	if err != nil {
		return back, "", err
	}
	flash := "sent: msgId " + s.MsgID + ", offsetMsgId " + s.OffsetMsgID + ", queue " + strconv.Itoa(s.Queue)
	if !m.DeliverAt.IsZero() {
		flash += ", due " + m.DeliverAt.UTC().Format(time.RFC3339)
	}
	return back, flash, nil
}

func (c *Console) clientsPage(ctx context.Context, _ *http.Request, ss session, v *view) error {
	v.Title, v.Page = "Clients", "clients"
	cs, err := c.b.Connections(ctx, ss.creds)
	v.Data = cs
	return err
}
