package process_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/cmd/internal/console"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// ratesEvery is the tests' sampling period (10 s in production).
const ratesEvery = 200 * time.Millisecond

// seriesIn returns the series named name.
func seriesIn(t *testing.T, rs console.Rates, name string) console.RateSeries {
	t.Helper()
	for _, s := range rs.Series {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no series %s", name)
	return console.RateSeries{}
}

// integral is what a rate series adds up to from the reading at from:
// each rate times its interval, which ends at the rate's point and starts
// at the reading before (readings: the times of a gauge's points, one per
// reading).
func integral(rs console.Rates, name string, from time.Time) float64 {
	var readings []time.Time
	for _, s := range rs.Series {
		if s.Name == "timers_pending" {
			for _, p := range s.Points {
				readings = append(readings, p.At)
			}
		}
	}
	var sum float64
	for _, s := range rs.Series {
		if s.Name != name {
			continue
		}
		for _, p := range s.Points {
			for k := 1; k < len(readings); k++ {
				if readings[k].Equal(p.At) && !readings[k-1].Before(from) {
					sum += p.V * readings[k].Sub(readings[k-1]).Seconds()
				}
			}
		}
	}
	return sum
}

// TestConsoleRatesMove: messages sent with the official Go client, some
// delayed, and consumed by a push consumer move the sampler's series: the
// rates of messages in, out and timers fired add up, interval by interval,
// to exactly what the test did, and /api/rates and the Overview's charts
// show the same series.
func TestConsoleRatesMove(t *testing.T) {
	t.Parallel()
	n := processtest.Start(t, processtest.Options{Metrics: true, MutateNode: func(c *process.Config) {
		c.Console, c.ConsoleRatesEvery = true, ratesEvery
	}})
	cb := process.ConsoleOf(n)
	ctx := context.Background()
	rates := func() console.Rates {
		rs, err := cb.Rates(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	topic := processtest.Unique("rates")
	processtest.CreateTopic(t, n, topic, 2)
	p := processtest.Producer(t, n.NamesrvAddr())
	// A reading before the first send: the sends fall in later intervals.
	var before time.Time
	waitUntil(t, 10*time.Second, func() bool {
		pts := seriesIn(t, rates(), "timers_pending").Points
		if len(pts) > 0 {
			before = pts[len(pts)-1].At
		}
		return !before.IsZero()
	})
	const plain, delayed = 40, 5
	for i := range plain {
		if _, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(fmt.Sprintf("m%d", i)))); err != nil {
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
	_, recv := processtest.PushConsumer(t, n.NamesrvAddr(), processtest.Unique("ratescg"), topic, "*")
	if !recv.WaitFor(plain+delayed, 20*time.Second) {
		t.Fatalf("consumer got %d of %d", recv.Len(), plain+delayed)
	}
	// Everything happened: one more reading after it, then the sums.
	done := time.Now()
	waitUntil(t, 10*time.Second, func() bool {
		pts := seriesIn(t, rates(), "msgs_in").Points
		return len(pts) > 0 && pts[len(pts)-1].At.After(done)
	})
	rs := rates()
	if rs.Every != ratesEvery || rs.Size != 361 {
		t.Fatalf("every %v, %d readings", rs.Every, rs.Size)
	}
	check := func(name string, want float64) {
		t.Helper()
		if got := integral(rs, name, before); math.Abs(got-want) > 1e-6 {
			t.Errorf("%s adds up to %v, want %v", name, got, want)
		}
	}
	check("msgs_in", plain+delayed)
	check("timers_fired", delayed)
	if got := integral(rs, "internal_in", before); got < delayed-1e-6 || math.Abs(got-math.Round(got)) > 1e-6 {
		t.Errorf("internal_in adds up to %v, want a whole number, at least the %d timer write-backs", got, delayed)
	}
	if got := integral(rs, "out_pull", before); got < plain+delayed-1e-6 || math.Abs(got-math.Round(got)) > 1e-6 {
		t.Errorf("out_pull adds up to %v, want a whole number, at least %d", got, plain+delayed)
	}
	var peak float64
	for _, pt := range seriesIn(t, rs, "msgs_in").Points {
		peak = math.Max(peak, pt.V)
	}
	if peak <= 0 {
		t.Fatalf("msgs_in never moved")
	}
	var stages []string
	for _, s := range rs.Series {
		if strings.HasPrefix(s.Name, "stage:") {
			stages = append(stages, s.Name)
		}
	}
	if w := integral(rs, "stage:commitlog", before); w < 1 {
		t.Errorf("the commitlog stage's rate did not move (%v); stages %v", w, stages)
	}

	// /api/rates and the Overview's chart show the sampler's series.
	cl := &http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get("http://" + n.MetricsAddr() + "/api/rates")
	if err != nil {
		t.Fatal(err)
	}
	var api struct {
		EverySeconds float64 `json:"every_seconds"`
		Series       []struct {
			Name   string       `json:"name"`
			Points [][2]float64 `json:"points"`
		} `json:"series"`
	}
	err = json.NewDecoder(resp.Body).Decode(&api)
	resp.Body.Close()
	if err != nil || api.EverySeconds != ratesEvery.Seconds() || len(api.Series) < 11 || api.Series[0].Name != "msgs_in" {
		t.Fatalf("/api/rates: %v %+v", err, api)
	}
	var apiIn float64
	for _, pt := range api.Series[0].Points {
		apiIn = math.Max(apiIn, pt[1])
	}
	if apiIn <= 0 {
		t.Errorf("/api/rates: msgs_in never moved")
	}
	resp, err = cl.Get("http://" + n.MetricsAddr() + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	i := strings.Index(string(page), `data-series="msgs_in" data-values="`)
	if i < 0 {
		t.Fatalf("the Overview draws no msgs_in line")
	}
	vals := strings.SplitN(string(page[i+len(`data-series="msgs_in" data-values="`):]), `"`, 2)[0]
	moved := false
	for _, v := range strings.Fields(vals) {
		moved = moved || v != "0"
	}
	if !moved {
		t.Errorf("the Overview's msgs_in line is flat: %s", vals)
	}
}
