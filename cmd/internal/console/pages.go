package console

import (
	"context"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// overviewData is the overview page.
type overviewData struct {
	O                Overview
	InRate, OutRate  float64
	Uptime           time.Duration
	DiskPct, WarnPct float64
	FullPct          float64
	Charts           []rateChart // rates over the last hour (rates.go)
	Every            time.Duration
	Window           string // what the charts span ("60 minutes")
	ChartsError      string
}

func (c *Console) overview(ctx context.Context, _ *http.Request, _ session, v *view) error {
	v.Title, v.Page = "Overview", "overview"
	o, err := c.b.Overview(ctx)
	if err != nil {
		return err
	}
	d := overviewData{O: o, Uptime: v.Now.Sub(o.Started).Round(time.Second),
		InRate: c.rates.rate("in", o.MsgsIn, v.Now), OutRate: c.rates.rate("out", o.MsgsOut, v.Now),
		DiskPct: o.DiskUsed * 100, WarnPct: o.DiskWarn * 100, FullPct: o.DiskFull * 100}
	if rs, err := c.b.Rates(ctx); err != nil {
		d.ChartsError = err.Error()
	} else {
		d.Charts, d.Every, d.Window = overviewCharts(rs, v.Now), rs.Every, spanText(rs)
	}
	v.Data = d
	return nil
}

// stagesData is the stages page.
type stagesData struct {
	Stages []Stage
	ByName map[string]Stage
}

func (c *Console) stagesPage(ctx context.Context, _ *http.Request, _ session, v *view) error {
	v.Title, v.Page = "Stages", "stages"
	st, err := c.b.Stages(ctx)
	if err != nil {
		return err
	}
	by := make(map[string]Stage, len(st))
	for i := range st {
		s := &st[i]
		s.RatePerS = c.rates.rate("stage:"+s.Name, s.Messages, v.Now)
		s.BusyRatio = min(c.rates.rate("busy:"+s.Name, s.Seconds, v.Now), 1)
		by[s.Name] = *s
	}
	sort.Slice(st, func(i, j int) bool { return st[i].Name < st[j].Name })
	v.Data = stagesData{Stages: st, ByName: by}
	return nil
}

// pageSize is the rows per page of long lists.
const pageSize = 50

// paged is one page of a filtered list.
type paged[T any] struct {
	Rows             []T
	Q                string
	Page, Pages      int
	Total, Matching  int
	PrevURL, NextURL string
}

// paginate filters rows by q (a substring of name, case-insensitive) and
// cuts page p (1-based) out of them.
func paginate[T any](rows []T, name func(T) string, q string, p int, base string) paged[T] {
	out := paged[T]{Q: q, Total: len(rows)}
	lq := strings.ToLower(q)
	match := rows
	if q != "" {
		match = make([]T, 0, 64)
		for _, r := range rows {
			if strings.Contains(strings.ToLower(name(r)), lq) {
				match = append(match, r)
			}
		}
	}
	out.Matching = len(match)
	out.Pages = max(1, (len(match)+pageSize-1)/pageSize)
	p = min(max(p, 1), out.Pages)
	out.Page = p
	lo, hi := (p-1)*pageSize, min(p*pageSize, len(match))
	out.Rows = match[lo:hi]
	link := func(n int) string {
		return base + "?q=" + urlQuery(q) + "&page=" + strconv.Itoa(n)
	}
	if p > 1 {
		out.PrevURL = link(p - 1)
	}
	if p < out.Pages {
		out.NextURL = link(p + 1)
	}
	return out
}

func pageNo(r *http.Request) int {
	n, _ := strconv.Atoi(r.URL.Query().Get("page"))
	return n
}

func (c *Console) topicsPage(ctx context.Context, r *http.Request, ss session, v *view) error {
	v.Title, v.Page = "Topics", "topics"
	ts, err := c.b.Topics(ctx, ss.creds)
	if err != nil {
		return err
	}
	// The operator's topics first, the system ones after them.
	sort.Slice(ts, func(i, j int) bool {
		if ts[i].System != ts[j].System {
			return !ts[i].System
		}
		return ts[i].Name < ts[j].Name
	})
	pg := paginate(ts, func(t Topic) string { return t.Name }, r.URL.Query().Get("q"), pageNo(r), "/topics")
	c.addTimerCounts(ctx, ss, pg.Rows)
	v.Data = pg
	return nil
}

// topicData is one topic's page.
type topicData struct {
	Topic  Topic
	Found  bool
	Queues []Queue
	Total  int64
	Timers *topicTimers
}

func (c *Console) topicPage(ctx context.Context, r *http.Request, ss session, v *view) error {
	name := r.URL.Query().Get("name")
	v.Title, v.Page = "Topic "+name, "topic"
	d := topicData{Topic: Topic{Name: name}}
	v.Data = &d
	ts, err := c.b.Topics(ctx, ss.creds)
	if err != nil {
		return err
	}
	for _, t := range ts {
		if t.Name == name {
			d.Topic, d.Found = t, true
		}
	}
	if !d.Found {
		return nil
	}
	d.Queues, err = c.b.TopicQueues(ctx, ss.creds, name)
	for _, q := range d.Queues {
		d.Total += q.Max - q.Min
	}
	d.Topic.Messages = d.Total
	d.Timers = c.topicTimersOf(ctx, r, ss, name)
	return err
}

func (c *Console) createTopic(ctx context.Context, r *http.Request, ss session) (string, string, error) {
	f := r.PostForm
	name := strings.TrimSpace(f.Get("name"))
	queues, _ := strconv.Atoi(f.Get("queues"))
	if queues <= 0 {
		queues = 4
	}
	t := Topic{Name: name, ReadQueues: queues, WriteQueues: queues, Perm: 6, Order: f.Get("order") == "on"}
	if err := validTopic(name); err != nil {
		return "/topics", "", err
	}
	if err := c.b.CreateTopic(ctx, ss.creds, t); err != nil {
		return "/topics", "", err
	}
	return "/topic?name=" + urlQuery(name), "topic " + name + " created", nil
}

func (c *Console) deleteTopic(ctx context.Context, r *http.Request, ss session) (string, string, error) {
	name := r.PostForm.Get("name")
	if err := validTopic(name); err != nil {
		return "/topics", "", err
	}
	if err := c.b.DeleteTopic(ctx, ss.creds, name); err != nil {
		return "/topic?name=" + urlQuery(name), "", err
	}
	return "/topics", "topic " + name + " deleted", nil
}

// validTopic is RocketMQ's topic name rule: 1-127 of [%|a-zA-Z0-9_-].
func validTopic(name string) error {
	if name == "" || len(name) > 127 {
		return errorf("topic name must be 1 to 127 characters")
	}
	for _, r := range name {
		if !(r == '%' || r == '|' || r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return errorf("topic name %q: only letters, digits, %%, |, _ and -", name)
		}
	}
	return nil
}

func (c *Console) groupsPage(ctx context.Context, r *http.Request, ss session, v *view) error {
	v.Title, v.Page = "Groups", "groups"
	gs, err := c.b.Groups(ctx, ss.creds)
	if err != nil {
		return err
	}
	// The operator's groups first, RocketMQ's built-in ones after them.
	sort.Slice(gs, func(i, j int) bool {
		if gs[i].System != gs[j].System {
			return !gs[i].System
		}
		return gs[i].Name < gs[j].Name
	})
	v.Data = paginate(gs, func(g Group) string { return g.Name }, r.URL.Query().Get("q"), pageNo(r), "/groups")
	return nil
}

// groupData is one group's page.
type groupData struct {
	D   GroupDetail
	Lag int64
}

func (c *Console) groupPage(ctx context.Context, r *http.Request, ss session, v *view) error {
	name := r.URL.Query().Get("name")
	v.Title, v.Page = "Group "+name, "group"
	d, err := c.b.GroupDetail(ctx, ss.creds, name)
	gd := groupData{D: d}
	for _, q := range d.Queues {
		gd.Lag += q.Lag
	}
	if gd.D.Group.Name == "" {
		gd.D.Group.Name = name
	}
	v.Data = gd
	return err
}

func (c *Console) resetGroup(ctx context.Context, r *http.Request, ss session) (string, string, error) {
	f := r.PostForm
	group, topic := f.Get("group"), f.Get("topic")
	back := "/group?name=" + urlQuery(group)
	at, err := time.ParseInLocation("2006-01-02T15:04", f.Get("at"), time.UTC)
	if err != nil {
		at, err = time.ParseInLocation("2006-01-02T15:04:05", f.Get("at"), time.UTC)
	}
	if err != nil {
		return back, "", errorf("time %q: want YYYY-MM-DDTHH:MM (UTC)", f.Get("at"))
	}
	if err := c.b.ResetGroup(ctx, ss.creds, group, topic, at); err != nil {
		return back, "", err
	}
	return back, "offsets of " + group + " on " + topic + " reset to " + at.Format(time.RFC3339), nil
}

// messagesData is the message page.
type messagesData struct {
	Q       MessageQuery
	Asked   bool
	Found   []Message
	Formats []string
}

func (c *Console) messagesPage(ctx context.Context, r *http.Request, ss session, v *view) error {
	v.Title, v.Page = "Messages", "messages"
	q := r.URL.Query()
	d := &messagesData{Q: MessageQuery{ID: strings.TrimSpace(q.Get("id")), Topic: strings.TrimSpace(q.Get("topic")),
		Key: strings.TrimSpace(q.Get("key"))}}
	v.Data = d
	mq := &d.Q
	if q.Get("offset") != "" {
		mq.ByOffset = true
		mq.Queue, _ = strconv.Atoi(q.Get("queue"))
		var err error
		if mq.Offset, err = strconv.ParseInt(q.Get("offset"), 10, 64); err != nil {
			return errorf("queue offset %q: not a number", q.Get("offset"))
		}
	}
	if mq.ID == "" && mq.Key == "" && !mq.ByOffset {
		return nil
	}
	d.Asked = true
	var err error
	d.Found, err = c.b.FindMessages(ctx, ss.creds, *mq)
	return err
}

func (c *Console) cancelTimer(ctx context.Context, r *http.Request, ss session) (string, string, error) {
	id, topic := strings.TrimSpace(r.PostForm.Get("offsetMsgId")), r.PostForm.Get("topic")
	back := r.PostForm.Get("back")
	if !strings.HasPrefix(back, "/") || strings.HasPrefix(back, "//") {
		back = "/timers"
	}
	if id == "" {
		return back, "", errorf("no message id")
	}
	if err := c.b.CancelTimer(ctx, ss.creds, topic, id); err != nil {
		return back, "", err
	}
	return back, "timer " + id + " cancelled", nil
}

func (c *Console) clusterPage(ctx context.Context, _ *http.Request, ss session, v *view) error {
	v.Title, v.Page = "Cluster", "cluster"
	cl, err := c.b.Cluster(ctx, ss.creds)
	v.Data = cl
	return err
}
