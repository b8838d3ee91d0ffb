package process_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/cmd/internal/admin"
	"github.com/wheelmq/wheelmq/cmd/internal/console"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// sampleSum sums the samples of name whose labels contain every one of
// want ("k=\"v\"" strings) on a /metrics page; found is false without any.
func sampleSum(page, name string, want ...string) (sum float64, found bool) {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `(\{[^}]*\})? (\S+)$`)
	for _, m := range re.FindAllStringSubmatch(page, -1) {
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(m[1], w)
		}
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err == nil {
			sum += v
			found = true
		}
	}
	return sum, found
}

// TestNumbersMatchTraffic runs sends (plain and delayed), pull and POP
// consumption on a real broker and checks the numbers an operator reads
// against what the test did, in /metrics, the console's backend and
// GET_BROKER_RUNTIME_INFO (wheelctl cluster list): messages in are the
// client's sends only (not the timer write-backs nor the POP journal),
// messages out count pull and POP, POP deadlines are not delivered timers,
// and no stage's mailbox depth is ever negative (the POP stage's read -21
// on an idle broker when its own messages bypassed the count).
func TestNumbersMatchTraffic(t *testing.T) {
	t.Parallel()
	n := processtest.Start(t, processtest.Options{Metrics: true, MutateNode: func(c *process.Config) { c.Console = true }})
	addr, maddr := n.BrokerAddr(), n.MetricsAddr()
	topic, popTopic := processtest.Unique("num"), processtest.Unique("numpop")
	group, popGroup := processtest.Unique("numcg"), processtest.Unique("numpopcg")
	processtest.CreateTopic(t, n, topic, 2)
	processtest.CreateTopic(t, n, popTopic, 1)
	p := processtest.Producer(t, n.NamesrvAddr())
	ctx := context.Background()
	const plain, delayed, nPop = 6, 4, 5
	for i := range plain {
		if _, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(fmt.Sprintf("p%d", i)))); err != nil {
			t.Fatal(err)
		}
	}
	for i := range delayed {
		m := primitive.NewMessage(topic, []byte(fmt.Sprintf("d%d", i)))
		m.WithDelayTimeLevel(1) // 1 s
		if _, err := p.SendSync(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	for i := range nPop {
		if _, err := p.SendSync(ctx, primitive.NewMessage(popTopic, []byte(fmt.Sprintf("q%d", i)))); err != nil {
			t.Fatal(err)
		}
	}
	_, recv := processtest.PushConsumer(t, n.NamesrvAddr(), group, topic, "*")
	if !recv.WaitFor(plain+delayed, 20*time.Second) {
		t.Fatalf("pull consumer got %d of %d", recv.Len(), plain+delayed)
	}
	var got []popped
	deadline := time.Now().Add(10 * time.Second)
	for len(got) < nPop && time.Now().Before(deadline) {
		_, ms := doPop(t, addr, popReq(popGroup, popTopic, -1, 1000, 0, "*"))
		got = append(got, ms...)
		if len(got) < nPop {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if len(got) != nPop {
		t.Fatalf("popped %d of %d", len(got), nPop)
	}
	for _, m := range got[:nPop-1] { // the last one is left to reach its deadline
		if r := processtest.Invoke(t, addr, ackReq(popGroup, popTopic, m)); r.Code != 0 {
			t.Fatalf("ack: %d %s", r.Code, r.Remark)
		}
	}
	// The un-acked delivery's deadline passes (1 s): a POP deadline, not a
	// delivered timer; the delayed messages' timers are delivered.
	waitMetric(t, maddr, "wheelmq_timer_pop_deadlines_total", func(v float64) bool { return v >= 1 })
	page := metricsPage(t, maddr)

	in, _ := sampleSum(page, "wheelmq_messages_in_total")
	if want := float64(plain + delayed + nPop); in != want {
		t.Errorf("wheelmq_messages_in_total = %v, want the %v client sends", in, want)
	}
	if v, _ := sampleSum(page, "wheelmq_stored_records_total", `kind="timer"`); v != delayed {
		t.Errorf("timer write-backs = %v, want %d", v, delayed)
	}
	if v, _ := sampleSum(page, "wheelmq_stored_records_total", `kind="pop"`); v < 1 {
		t.Errorf("POP records = %v, want some (journal, deadline)", v)
	}
	pulled, _ := sampleSum(page, "wheelmq_messages_out_total", `protocol="pull"`)
	viaPop, _ := sampleSum(page, "wheelmq_messages_out_total", `protocol="pop"`)
	if pulled < plain+delayed || viaPop != nPop {
		t.Errorf("messages out: pull %v (want >= %d), pop %v (want %d)", pulled, plain+delayed, viaPop, nPop)
	}
	if v, _ := sampleSum(page, "wheelmq_timer_delivered_total"); v != delayed {
		t.Errorf("wheelmq_timer_delivered_total = %v, want %d (POP deadlines counted apart)", v, delayed)
	}
	if v, _ := sampleSum(page, "rocketmq_messages_in_total", `topic="`+topic+`"`, `message_type="Delay"`); v != delayed {
		t.Errorf("rocketmq_messages_in_total Delay on %s = %v, want %d", topic, v, delayed)
	}
	if v, _ := sampleSum(page, "rocketmq_messages_out_total", `consumer_group="`+popGroup+`"`); v != nPop {
		t.Errorf("rocketmq_messages_out_total of the POP group = %v, want %d", v, nPop)
	}

	// The console and GET_BROKER_RUNTIME_INFO read the same counters.
	o, err := process.ConsoleOf(n).Overview(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if o.MsgsIn != in || o.MsgsOut != pulled+viaPop {
		t.Errorf("console Overview: in %v out %v; /metrics in %v out %v", o.MsgsIn, o.MsgsOut, in, pulled+viaPop)
	}
	tm, err := process.ConsoleOf(n).Timers(ctx, []int64{60_000})
	if err != nil {
		t.Fatal(err)
	}
	if tm.Delivered != delayed || tm.PopDeadlines < 1 {
		t.Errorf("console Timers: delivered %v (want %d), POP deadlines %v (want >= 1)", tm.Delivered, delayed, tm.PopDeadlines)
	}
	s := &admin.Session{Timeout: 5 * time.Second}
	defer s.Close()
	info, err := s.RuntimeInfo(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	if info["msgPutTotalTodayNow"] != strconv.Itoa(int(in)) || info["msgGetTotalTodayNow"] != strconv.Itoa(int(o.MsgsOut)) {
		t.Errorf("runtime info put %s get %s; console in %v out %v", info["msgPutTotalTodayNow"], info["msgGetTotalTodayNow"], o.MsgsIn, o.MsgsOut)
	}

	// No stage's mailbox depth is negative: not on the page, not in the
	// console, and not while the POP stage ticks on for a while.
	for i := 0; i < 20; i++ {
		for _, m := range regexp.MustCompile(`(?m)^wheelmq_actor_mailbox_depth\{stage="([^"]+)"\} (\S+)$`).FindAllStringSubmatch(metricsPage(t, maddr), -1) {
			if v, _ := strconv.ParseFloat(m[2], 64); v < 0 {
				t.Fatalf("stage %s: mailbox depth %v", m[1], v)
			}
		}
		stages, err := process.ConsoleOf(n).Stages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range stages {
			if st.Depth < 0 {
				t.Fatalf("console: stage %s mailbox depth %v", st.Name, st.Depth)
			}
		}
		time.Sleep(25 * time.Millisecond) // sampling the gauge over the POP stage's 10 ms ticks
	}
}

// TestOneRole checks that the console's Overview and Cluster pages and
// wheelctl's source (GET_BROKER_RUNTIME_INFO through admin.Role) name a
// standalone broker the same (the Overview said "standalone" where the
// Cluster page said "master").
func TestOneRole(t *testing.T) {
	t.Parallel()
	n := processtest.Start(t, processtest.Options{Metrics: true, MutateNode: func(c *process.Config) { c.Console = true }})
	ctx := context.Background()
	cb := process.ConsoleOf(n)
	o, err := cb.Overview(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := cb.Cluster(ctx, console.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	s := &admin.Session{Timeout: 5 * time.Second}
	defer s.Close()
	info, err := s.RuntimeInfo(ctx, n.BrokerAddr())
	if err != nil {
		t.Fatal(err)
	}
	if len(cl.Brokers) != 1 {
		t.Fatalf("cluster page: %d brokers", len(cl.Brokers))
	}
	cli := admin.Role(info, cl.Brokers[0].ID)
	if o.Role != "standalone" || cl.Brokers[0].Role != o.Role || cli != o.Role {
		t.Fatalf("roles: overview %q, cluster page %q, wheelctl %q; want one", o.Role, cl.Brokers[0].Role, cli)
	}
}

// TestTimerChartBuckets plants timers through the official client at known
// offsets (19 min 40 s, 25 min 30 s, 47 min 30 s: the far wheel's 10 min
// buckets) and reads the console's "next hour" chart: each is drawn in the
// bar of its minute (the 19 min 40 s timer was drawn at 10 min).
func TestTimerChartBuckets(t *testing.T) {
	t.Parallel()
	n := processtest.Start(t, processtest.Options{Metrics: true, MutateNode: func(c *process.Config) { c.Console = true }})
	topic := processtest.Unique("chart")
	processtest.CreateTopic(t, n, topic, 1)
	p := processtest.Producer(t, n.NamesrvAddr())
	now := time.Now()
	want := map[string]int{"19m": 1, "25m": 2, "47m": 1}
	for _, off := range []time.Duration{19*time.Minute + 40*time.Second, 25*time.Minute + 30*time.Second,
		25*time.Minute + 35*time.Second, 47*time.Minute + 30*time.Second} {
		m := primitive.NewMessage(topic, []byte("t"))
		m.WithProperty("TIMER_DELIVER_MS", strconv.FormatInt(now.Add(off).UnixMilli(), 10))
		if _, err := p.SendSync(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	waitMetric(t, n.MetricsAddr(), "wheelmq_timer_pending", func(v float64) bool { return v == 4 })
	w := newWebClient(t, "http://"+n.MetricsAddr())
	code, body := w.get("/timers?range=hour")
	if code != 200 {
		t.Fatalf("GET /timers: %d", code)
	}
	got := map[string]int{}
	for _, m := range regexp.MustCompile(`<title>(\d+m): (\d+)</title>`).FindAllStringSubmatch(body, -1) {
		if c, _ := strconv.Atoi(m[2]); c > 0 {
			got[m[1]] = c
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("next-hour chart bars %v, want %v", got, want)
	}
}

// TestFindByKeyOncePerMessage sends delayed messages with one key, waits
// until they are written back, and looks the key up through the console:
// each message is listed once (the timer copy and its write-back were both
// listed: 40 found for 20 sends), its life shows the write-back, and the
// TIMER_* times read as times with the raw value beside.
func TestFindByKeyOncePerMessage(t *testing.T) {
	t.Parallel()
	n := processtest.Start(t, processtest.Options{Metrics: true, MutateNode: func(c *process.Config) {
		c.Console = true
	}})
	topic := processtest.Unique("bykey")
	processtest.CreateTopic(t, n, topic, 1)
	p := processtest.Producer(t, n.NamesrvAddr())
	const sends = 20
	for i := range sends {
		m := primitive.NewMessage(topic, []byte(fmt.Sprintf("k%d", i)))
		m.WithKeys([]string{"order-7"})
		m.WithDelayTimeLevel(1)
		if _, err := p.SendSync(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	waitMetric(t, n.MetricsAddr(), "wheelmq_timer_delivered_total", func(v float64) bool { return v == sends })
	var found []console.Message
	deadline := time.Now().Add(15 * time.Second)
	for { // the index takes the write-backs asynchronously
		var err error
		found, err = process.ConsoleOf(n).FindMessages(context.Background(), console.Credentials{},
			console.MessageQuery{Topic: topic, Key: "order-7"})
		if err != nil {
			t.Fatal(err)
		}
		written := 0
		for _, m := range found {
			for _, e := range m.Life {
				if e.What == "written back" {
					written++
				}
			}
		}
		if written == sends || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(found) != sends {
		t.Fatalf("found %d entries for %d sends", len(found), sends)
	}
	out := found[0].Properties["TIMER_OUT_MS"]
	if !regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC \(\d+\)$`).MatchString(out) {
		t.Fatalf("TIMER_OUT_MS shown as %q, want a time and the raw value", out)
	}
}

// TestGroupsShowWhatConsumersDo connects a clustering and a broadcasting
// consumer and checks the console's groups: each shows its consumers'
// message model from their heartbeats (every group read "broadcast yes",
// the configuration flag), a group without consumers shows none, and
// RocketMQ's built-in groups and topics are marked and listed after the
// operator's.
func TestGroupsShowWhatConsumersDo(t *testing.T) {
	t.Parallel()
	n := processtest.Start(t, processtest.Options{Metrics: true, MutateNode: func(c *process.Config) { c.Console = true }})
	topic := processtest.Unique("models")
	clustering, broadcasting := processtest.Unique("a_clu"), processtest.Unique("a_bro")
	processtest.CreateTopic(t, n, topic, 1)
	processtest.PushConsumer(t, n.NamesrvAddr(), clustering, topic, "*")
	processtest.PushConsumer(t, n.NamesrvAddr(), broadcasting, topic, "*", consumer.WithConsumerModel(consumer.BroadCasting))
	ctx := context.Background()
	models := map[string]string{}
	var groups []console.Group
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) { // heartbeats arrive as the consumers start
		var err error
		if groups, err = process.ConsoleOf(n).Groups(ctx, console.Credentials{}); err != nil {
			t.Fatal(err)
		}
		for _, g := range groups {
			models[g.Name] = g.Model
		}
		if models[clustering] != "" && models[broadcasting] != "" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if models[clustering] != "CLUSTERING" || models[broadcasting] != "BROADCASTING" || models["TOOLS_CONSUMER"] != "" {
		t.Fatalf("models: %s %q, %s %q, TOOLS_CONSUMER %q", clustering, models[clustering], broadcasting, models[broadcasting], models["TOOLS_CONSUMER"])
	}
	for _, g := range groups {
		if want := g.Name == "TOOLS_CONSUMER" || g.Name == "CID_RMQ_SYS_TRANS" || g.Name == "SELF_TEST_C_GROUP"; want && !g.System {
			t.Errorf("built-in group %s not marked", g.Name)
		} else if g.Name == clustering && g.System {
			t.Errorf("group %s marked system", g.Name)
		}
	}
	w := newWebClient(t, "http://"+n.MetricsAddr())
	_, body := w.get("/groups")
	if i, j := strings.Index(body, clustering), strings.Index(body, "TOOLS_CONSUMER"); i < 0 || j < 0 || i > j {
		t.Errorf("groups page: the operator's groups do not come first (%d, %d)", i, j)
	}
	if !regexp.MustCompile(`TOOLS_CONSUMER</a> <small class="system">system</small>`).MatchString(body) ||
		!strings.Contains(body, `<td class="model">broadcasting</td>`) {
		t.Errorf("groups page lacks the system mark or the broadcasting model:\n%s", body)
	}
	topics, err := process.ConsoleOf(n).Topics(ctx, console.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range topics {
		if (tp.Name == "SELF_TEST_TOPIC" || tp.Name == "OFFSET_MOVED_EVENT") && !tp.System {
			t.Errorf("system topic %s not marked", tp.Name)
		} else if tp.Name == topic && tp.System {
			t.Errorf("topic %s marked system", tp.Name)
		}
	}
}
