package console

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

func urlQuery(s string) string { return url.QueryEscape(s) }

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"num":      fmtNum,
	"rate":     func(v float64) string { return fmtNum(v) + "/s" },
	"pct":      func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + "%" },
	"secs":     fmtSecs,
	"bytes":    fmtBytes,
	"time":     func(t time.Time) string { return fmtTime(t) },
	"ms":       func(ms int64) string { return fmtTime(time.UnixMilli(ms)) },
	"dur":      func(d time.Duration) string { return d.String() },
	"q":        urlQuery,
	"lower":    strings.ToLower,
	"barchart": barChart,
	"lines":    lineSVG,
	"pipeline": pipelineSVG,
	"diskbar":  diskBar,
	"text":     bodyText,
	"json":     bodyJSON,
	"hex":      bodyHex,
	"add":      func(a, b int) int { return a + b },
	"perm":     permString,
	"mul100":   func(v float64) float64 { return v * 100 },
	"f64":      func(v int64) float64 { return float64(v) },
	"add64":    func(a, b int64) int64 { return a + b },
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000Z")
}

// fmtNum prints a count or rate shortly (1234567 -> 1.23M).
func fmtNum(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v):
		return "-"
	case a >= 1e9:
		return strconv.FormatFloat(v/1e9, 'f', 2, 64) + "G"
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 2, 64) + "M"
	case a >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + "k"
	case a == math.Trunc(a):
		return strconv.FormatFloat(v, 'f', 0, 64)
	default:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
}

func fmtSecs(s float64) string {
	switch {
	case math.IsNaN(s) || s < 0:
		return "-"
	case s < 1e-3:
		return strconv.FormatFloat(s*1e6, 'f', 0, 64) + "µs"
	case s < 1:
		return strconv.FormatFloat(s*1e3, 'f', 1, 64) + "ms"
	default:
		return strconv.FormatFloat(s, 'f', 2, 64) + "s"
	}
}

func fmtBytes(b float64) string {
	const k = 1024.0
	switch {
	case b >= k*k*k:
		return strconv.FormatFloat(b/(k*k*k), 'f', 2, 64) + " GiB"
	case b >= k*k:
		return strconv.FormatFloat(b/(k*k), 'f', 1, 64) + " MiB"
	case b >= k:
		return strconv.FormatFloat(b/k, 'f', 1, 64) + " KiB"
	default:
		return strconv.FormatFloat(b, 'f', 0, 64) + " B"
	}
}

func permString(p int) string {
	s := ""
	if p&4 != 0 {
		s += "R"
	}
	if p&2 != 0 {
		s += "W"
	}
	if s == "" {
		return "-"
	}
	return s
}

// barChart draws bars as an SVG: one rect per bar, its count in a title
// (the tooltip) and a data-count attribute (for tests and scripts).
func barChart(bars []bar) template.HTML {
	const w, h, pad = 960.0, 220.0, 24.0
	var b strings.Builder
	maxC := int64(1)
	for _, x := range bars {
		maxC = max(maxC, x.Count)
	}
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %.0f %.0f" role="img" aria-label="pending timers">`, w, h+pad)
	bw := (w - 2*pad) / float64(max(len(bars), 1))
	every := max(1, len(bars)/12)
	for i, x := range bars {
		bh := (h - pad) * float64(x.Count) / float64(maxC)
		xx := pad + float64(i)*bw
		fmt.Fprintf(&b, `<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f" data-count="%d"><title>%s: %d</title></rect>`,
			xx+1, h-bh, math.Max(bw-2, 1), bh, x.Count, template.HTMLEscapeString(x.Label), x.Count)
		if i%every == 0 {
			fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%.0f">%s</text>`, xx, h+16, template.HTMLEscapeString(x.Label))
		}
	}
	fmt.Fprintf(&b, `<text class="tick" x="%.0f" y="14">max %d</text></svg>`, pad, maxC)
	return template.HTML(b.String()) //nolint:gosec // built from numbers and escaped labels
}

// diskBar draws disk use against the watermarks (percentages).
func diskBar(used, warn, full float64) template.HTML {
	const w = 400.0
	x := func(p float64) float64 { return w * math.Min(math.Max(p, 0), 100) / 100 }
	cls := "ok"
	if full > 0 && used >= full {
		cls = "bad"
	} else if warn > 0 && used >= warn {
		cls = "warn"
	}
	s := fmt.Sprintf(`<svg class="disk" viewBox="0 0 %.0f 24" role="img" aria-label="disk use"><rect class="track" x="0" y="4" width="%.0f" height="16"/>`+
		`<rect class="used %s" x="0" y="4" width="%.1f" height="16"/>`, w, w, cls, x(used))
	if warn > 0 {
		s += fmt.Sprintf(`<line class="mark" x1="%.1f" x2="%.1f" y1="0" y2="24"><title>warning mark %.0f%%</title></line>`, x(warn), x(warn), warn)
	}
	if full > 0 {
		s += fmt.Sprintf(`<line class="mark full" x1="%.1f" x2="%.1f" y1="0" y2="24"><title>full mark %.0f%%</title></line>`, x(full), x(full), full)
	}
	return template.HTML(s + "</svg>") //nolint:gosec // numbers only
}

// bodyText is the body as text (invalid UTF-8 shown as replacement runes).
func bodyText(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// bodyJSON pretty-prints a JSON body ("" when it is not JSON).
func bodyJSON(b []byte) string {
	var out bytes.Buffer
	if len(b) == 0 || json.Indent(&out, b, "", "  ") != nil {
		return ""
	}
	return out.String()
}

// bodyHex is a hex dump of at most 4 KiB of the body.
func bodyHex(b []byte) string {
	if len(b) > 4096 {
		return hex.Dump(b[:4096]) + "...\n"
	}
	return hex.Dump(b)
}

// node is one box of the pipeline diagram.
type node struct {
	name  string // stage name ("" for the router, which is no stage)
	label string
	x, y  float64
}

// pipeNodes follow docs/architecture.md's diagram: the router hands work
// to the request stages; the writer feeds dispatch, which feeds pull and
// the index; timer messages go round the timer stages and back to the
// writer; topics feed the registrar.
var pipeNodes = []node{
	{"", "netloop router", 10, 250},
	{"commitlog", "commitlog writer", 230, 10}, {"dispatch", "dispatch", 450, 10}, {"index", "index", 670, 10},
	{"pull", "pull", 450, 90}, {"pull_read", "pull readers", 670, 90}, {"offsets", "offsets", 230, 170}, {"transaction", "transaction", 230, 250},
	{"clients", "clients", 230, 330}, {"groups", "groups", 230, 410}, {"acl", "acl", 230, 490},
	{"topics", "topics", 230, 570}, {"registrar", "registrar", 450, 570},
	{"enqueue_get", "timer enqueue_get", 450, 250}, {"enqueue_put", "timer enqueue_put", 670, 250},
	{"dequeue_get", "timer dequeue_get", 670, 330}, {"dequeue_message", "timer dequeue_message", 450, 330},
	{"dequeue_put", "timer dequeue_put", 450, 410}, {"timer_flush", "timer_flush", 670, 410},
	{"retention", "retention", 670, 490}, {"stats", "stats", 670, 570},
}

// pipeEdges are the diagram's arrows, by label.
var pipeEdges = [][2]string{
	{"netloop router", "commitlog writer"}, {"netloop router", "pull"}, {"netloop router", "offsets"},
	{"netloop router", "transaction"}, {"netloop router", "clients"}, {"netloop router", "groups"},
	{"netloop router", "acl"}, {"netloop router", "topics"},
	{"commitlog writer", "dispatch"}, {"dispatch", "index"}, {"dispatch", "pull"}, {"pull", "pull readers"},
	{"topics", "registrar"}, {"dispatch", "timer enqueue_get"}, {"timer enqueue_get", "timer enqueue_put"},
	{"timer enqueue_put", "timer dequeue_get"}, {"timer dequeue_get", "timer dequeue_message"},
	{"timer dequeue_message", "timer dequeue_put"}, {"timer dequeue_message", "commitlog writer"},
	{"transaction", "commitlog writer"},
}

const boxW, boxH = 190.0, 62.0

// pipelineSVG draws the pipeline with each stage's numbers on its box
// (the dequeue_message workers summed into one).
func pipelineSVG(d stagesData) template.HTML {
	pos := map[string]node{}
	for _, n := range pipeNodes {
		pos[n.label] = n
	}
	var b strings.Builder
	b.WriteString(`<svg class="pipeline" viewBox="0 0 880 650" role="img" aria-label="pipeline">`)
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z"/></marker></defs>`)
	for _, e := range pipeEdges {
		b.WriteString(edgePath(pos[e[0]], pos[e[1]]))
	}
	for _, n := range pipeNodes {
		cls, line1, line2 := "box", "", ""
		if n.name == "" {
			line1 = "gnet event loops"
		} else {
			st, ok := stageSum(d, n.name)
			switch {
			case !ok:
				cls += " absent"
				line1 = "not running"
			default:
				if !st.Up {
					cls += " down"
				} else if st.Depth > 1000 {
					cls += " busy"
				}
				line1 = fmtNum(st.RatePerS) + "/s · depth " + fmtNum(st.Depth)
				line2 = "p99 " + fmtSecs(st.P99) + " · restarts " + fmtNum(st.Restarts)
			}
		}
		fmt.Fprintf(&b, `<g class="%s" data-stage="%s"><rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" rx="6"/>`,
			cls, template.HTMLEscapeString(n.name), n.x, n.y, boxW, boxH)
		fmt.Fprintf(&b, `<text class="name" x="%.0f" y="%.0f">%s</text>`, n.x+8, n.y+18, template.HTMLEscapeString(n.label))
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">%s</text>`, n.x+8, n.y+36, template.HTMLEscapeString(line1))
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">%s</text></g>`, n.x+8, n.y+53, template.HTMLEscapeString(line2))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // escaped
}

// edgePath is one arrow: straight between columns left to right, down a
// column when one box is under the other, else a curve from the left side
// of the source round to the right side of the target.
func edgePath(a, z node) string {
	var d string
	switch {
	case z.x > a.x && z.y == a.y, z.x > a.x+boxW && a.name == "":
		d = fmt.Sprintf("M %.0f %.0f L %.0f %.0f", a.x+boxW, a.y+boxH/2, z.x, z.y+boxH/2)
	case z.x > a.x:
		d = fmt.Sprintf("M %.0f %.0f C %.0f %.0f, %.0f %.0f, %.0f %.0f", a.x+boxW, a.y+boxH/2, a.x+boxW+15, a.y+boxH/2, z.x-15, z.y+boxH/2, z.x, z.y+boxH/2)
	case z.x == a.x && z.y > a.y:
		d = fmt.Sprintf("M %.0f %.0f L %.0f %.0f", a.x+boxW/2, a.y+boxH, z.x+boxW/2, z.y)
	case z.x == a.x && z.y < a.y && z.y+boxH+20 > a.y:
		d = fmt.Sprintf("M %.0f %.0f L %.0f %.0f", a.x+boxW/2, a.y, z.x+boxW/2, z.y+boxH)
	default: // back or up a column: out on the left, in on the right
		d = fmt.Sprintf("M %.0f %.0f C %.0f %.0f, %.0f %.0f, %.0f %.0f", a.x, a.y+boxH/2, a.x-40, a.y+boxH/2, z.x+boxW+40, z.y+boxH/2, z.x+boxW, z.y+boxH/2)
		if z.x == a.x {
			d = fmt.Sprintf("M %.0f %.0f C %.0f %.0f, %.0f %.0f, %.0f %.0f", a.x+boxW, a.y+boxH/2, a.x+boxW+30, a.y+boxH/2, z.x+boxW+30, z.y+boxH/2, z.x+boxW, z.y+boxH/2)
		}
	}
	return `<path class="edge" d="` + d + `" marker-end="url(#arrow)"/>`
}

// stageSum is the stage called name, or the sum of its numbered workers
// (name_0, name_1, ...).
func stageSum(d stagesData, name string) (Stage, bool) {
	if s, ok := d.ByName[name]; ok {
		return s, true
	}
	var sum Stage
	found := false
	for i := 0; ; i++ {
		s, ok := d.ByName[name+"_"+strconv.Itoa(i)]
		if !ok {
			break
		}
		found = true
		sum.Up = sum.Up || s.Up
		sum.RatePerS += s.RatePerS
		sum.Depth += s.Depth
		sum.Restarts += s.Restarts
		sum.P99 = math.Max(sum.P99, s.P99)
	}
	return sum, found
}
