package topview

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/admin"
)

// MinWidth is the narrowest frame Render lays out; narrower widths are
// rendered at MinWidth and cut.
const MinWidth = 40

// Render draws v as plain text lines no wider than width columns.
func Render(v View, width int) string {
	w := max(width, MinWidth)
	var b strings.Builder
	line := func(s string) {
		r := []rune(strings.TrimRight(s, " "))
		if len(r) > width && width > 0 {
			r = r[:width]
		}
		b.WriteString(string(r))
		b.WriteByte('\n')
	}
	line(header(v))
	if v.NotWheelmq {
		line("this page has none of wheelmq's metrics: is the URL the broker's --metrics-listen /metrics?")
		return b.String()
	}
	if v.Interval == 0 {
		line("first reading: p99 and lateness since the broker started; rates from the next reading")
	}
	if v.HasTraffic {
		line("")
		line("REQUESTS")
		tr := v.Traffic
		grid(line, w, []cell{{"requests/s", rate(tr.Rate)}, {"refused/s", rate(tr.RefusedRate)}})
		if len(tr.Busiest) > 0 {
			line("  busiest       " + codeRates(tr.Busiest, admin.RequestName))
		}
		if len(tr.Refused) > 0 {
			line("  refused with  " + codeRates(tr.Refused, admin.ResponseName))
		}
	}
	if m := v.Messages; !math.IsNaN(m.In) { // brokers before wheelmq_messages_in_total lack it
		line("")
		line("MESSAGES (in: client sends; out: pull, POP and gRPC)")
		grid(line, w, []cell{{"in/s", rate(m.InRate)}, {"out/s", rate(m.OutRate)}, {"in", count(m.In)}, {"out", count(m.Out)}})
	}
	line("")
	stageTable(line, v.Stages, w)
	line("")
	line("TIMERS")
	t := v.Timers
	timerCells := []cell{
		{"pending", count(t.Pending)}, {"due in 1 min", count(t.DueNextMinute)},
		{"enqueued/s", rate(t.EnqueuedRate)}, {"delivered/s", rate(t.DeliveredRate)},
		{"lateness p50", seconds(t.LatenessP50)}, {"lateness p99", seconds(t.LatenessP99)},
		{"rolled/s", rate(t.RolledRate)}, {"cancelled", count(t.Cancelled)},
		{"skipped", count(t.Skipped)}, {"duplicates", count(t.Duplicates)}, {"timer log", bytes(t.Log)},
	}
	if !math.IsNaN(t.PopDeadlines) { // counted apart from delivered timers
		timerCells = append(timerCells, cell{"POP deadlines", count(t.PopDeadlines)})
	}
	grid(line, w, timerCells)
	line("")
	line("STORE")
	s := v.Store
	grid(line, w, []cell{
		{"writes", bytesRate(s.WriteRate)}, {"commitlog", bytes(s.CommitLog)},
		{"unflushed", bytes(s.Unflushed)}, {"dispatch lag", bytes(s.Lag)},
		{"send backlog", count(s.SendBacklog)},
	})
	return b.String()
}

// header is the first line: time, uptime, interval, process figures.
func header(v View) string {
	parts := []string{"wheelmq top", v.At.UTC().Format("15:04:05 UTC")}
	if v.Uptime > 0 {
		parts = append(parts, "up "+v.Uptime.String())
	}
	if v.Interval > 0 {
		parts = append(parts, fmt.Sprintf("interval %.1fs", v.Interval.Seconds()))
	}
	if !math.IsNaN(v.RSS) {
		parts = append(parts, "rss "+bytes(v.RSS))
	}
	if !math.IsNaN(v.Goroutines) {
		parts = append(parts, count(v.Goroutines)+" goroutines")
	}
	switch {
	case v.Healthy == 0:
		parts = append(parts, "UNHEALTHY (a stage is down, see /healthz)")
	case v.Healthy == 1:
		parts = append(parts, "healthy")
	}
	return strings.Join(parts, " · ")
}

// stageTable draws one row per stage; the busy bar takes what width is left.
func stageTable(line func(string), stages []Stage, w int) {
	const fixed = 15 + 9 + 9 + 10 + 9 + 2 + 5
	bar := min(max(w-fixed-1, 0), 20)
	line(fmt.Sprintf("%-18s%9s%9s%10s%9s  %-*s", "STAGE", "MSG/S", "MAILBOX", "P99", "RESTARTS", bar+5, "BUSY"))
	if len(stages) == 0 {
		line("(no stages on this page)")
		return
	}
	for _, s := range stages {
		restarts := count(s.Restarts)
		if s.NewRestarts > 0 {
			restarts = "+" + count(s.NewRestarts) + " " + restarts
		}
		state := busy(s.Busy, bar)
		if s.Down {
			state = "DOWN: stopped for good by its supervisor"
		}
		line(fmt.Sprintf("%-18s%9s%9s%10s%9s  %s", s.Name, rate(s.Rate), count(s.Depth), seconds(s.P99),
			restarts, state))
	}
}

// busy draws a share as a bar of width columns and a percentage.
func busy(share float64, width int) string {
	if math.IsNaN(share) {
		return strings.Repeat(" ", width) + "    -"
	}
	full := int(math.Round(share * float64(width)))
	return strings.Repeat("█", full) + strings.Repeat("░", width-full) + fmt.Sprintf("%4.0f%%", share*100)
}

// cell is one labelled figure of a grid.
type cell struct{ label, value string }

// grid lays cells out in as many columns of 25 as the width holds.
func grid(line func(string), w int, cells []cell) {
	const cellWidth = 25
	per := max((w-2)/cellWidth, 1)
	for i := 0; i < len(cells); i += per {
		var b strings.Builder
		b.WriteString("  ")
		for _, c := range cells[i:min(i+per, len(cells))] {
			fmt.Fprintf(&b, "%-13s%10s  ", c.label, c.value)
		}
		line(b.String())
	}
}

// count formats a count or gauge: 999, 12.3k, 4.56M.
func count(v float64) string {
	switch {
	case math.IsNaN(v):
		return "n/a"
	case math.Abs(v) < 1e4:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) < 1e6:
		return fmt.Sprintf("%.1fk", v/1e3)
	case math.Abs(v) < 1e9:
		return fmt.Sprintf("%.2fM", v/1e6)
	}
	return fmt.Sprintf("%.2fG", v/1e9)
}

// rate formats a per-second figure ("-" before the second reading).
func rate(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case v > 0 && v < 10:
		return fmt.Sprintf("%.1f", v)
	}
	return count(v)
}

// seconds formats a duration given in seconds.
func seconds(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	d := time.Duration(v * float64(time.Second))
	switch {
	case d < time.Microsecond:
		return fmt.Sprintf("%dns", d.Nanoseconds())
	case d < time.Millisecond:
		return fmt.Sprintf("%.1fµs", v*1e6)
	case d < time.Second:
		return fmt.Sprintf("%.1fms", v*1e3)
	}
	return fmt.Sprintf("%.2fs", v)
}

// bytes formats a size in IEC units.
func bytes(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for math.Abs(v) >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f B", v)
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}

// bytesRate formats bytes per second.
func bytesRate(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return bytes(v) + "/s"
}

// FormatCount formats a count or gauge as the frame does (n/a when NaN).
func FormatCount(v float64) string { return count(v) }

// FormatRate formats a per-second figure as the frame does (- when NaN).
func FormatRate(v float64) string { return rate(v) }

// FormatSeconds formats a duration in seconds as the frame does.
func FormatSeconds(v float64) string { return seconds(v) }

// FormatBytes formats a size as the frame does.
func FormatBytes(v float64) string { return bytes(v) }

// codeRates lists codes with their names and rates:
// "SEND_MESSAGE_V2 5.2k/s · PULL_MESSAGE 2.3k/s".
func codeRates(cs []CodeRate, name func(int32) string) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		label := c.Code
		if n, err := strconv.ParseInt(c.Code, 10, 32); err == nil {
			label = name(int32(n))
		}
		parts[i] = label + " " + rate(c.Rate) + "/s"
	}
	return strings.Join(parts, " · ")
}
