package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/wheelmq/wheelmq/cmd/wheelctl/internal/scrape"
	"github.com/wheelmq/wheelmq/cmd/wheelctl/internal/topview"
)

// topOptions are the flags of top.
type topOptions struct {
	url      string
	interval time.Duration
	once     bool
	width    int
}

// addMetricsFlag adds --metrics.
func addMetricsFlag(c *cobra.Command, url *string) {
	c.Flags().StringVar(url, "metrics", envOr("METRICS", defaultMetrics),
		"the broker's /metrics URL (its --metrics-listen; env WHEELMQ_METRICS)")
}

func newTopCmd(g *globals) *cobra.Command {
	var o topOptions
	c := &cobra.Command{
		Use:   "top [--metrics URL] [--interval 1s]",
		Short: "Live view of a broker: actor stages, timer pipeline, store",
		Long: `A live terminal view read from the broker's Prometheus /metrics, refreshed every --interval:

  stages  messages/s, mailbox depth, p99 processing time and busy share over the interval, restarts
  timers  pending, due in the next minute, enqueued/s, delivered/s, lateness p50/p99, ...
  store   CommitLog write rate and size, unflushed bytes, dispatch lag, send backlog

docs/operations.md says what each figure means and what to alert on. Quit with q or Ctrl-C.
--once prints one frame (two readings --interval apart) and exits, for scripts and logs.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.interval < 100*time.Millisecond {
				return usagef("--interval %s: want at least 100ms", o.interval)
			}
			if o.once {
				return topOnce(cmd.Context(), g, o)
			}
			out, isFile := g.stdout.(*os.File)
			if !isFile || !term.IsTerminal(int(out.Fd())) {
				return withHint(fmt.Errorf("top needs a terminal"), "use --once to print one frame")
			}
			m := &topModel{url: o.url, interval: o.interval, client: &http.Client{}, ctx: cmd.Context()}
			p := tea.NewProgram(m, tea.WithAltScreen(), tea.WithContext(cmd.Context()),
				tea.WithInput(g.stdin), tea.WithOutput(g.stdout))
			if _, err := p.Run(); err != nil && cmd.Context().Err() == nil {
				return fmt.Errorf("terminal: %w", err)
			}
			return nil
		},
	}
	addMetricsFlag(c, &o.url)
	c.Flags().DurationVar(&o.interval, "interval", time.Second, "refresh interval")
	c.Flags().BoolVar(&o.once, "once", false, "print one frame and exit")
	c.Flags().IntVar(&o.width, "width", 0, "frame width for --once (default: the terminal's, else 100)")
	return c
}

// readTwice reads the page twice, interval apart.
func readTwice(ctx context.Context, url string, interval, timeout time.Duration) (prev, cur *scrape.Snapshot, err error) {
	client := &http.Client{}
	read := func() (*scrape.Snapshot, error) {
		rctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		s, err := scrape.Fetch(rctx, client, url)
		if err != nil {
			return nil, withHint(err, "is the broker's --metrics-listen there? point --metrics at http://HOST:PORT/metrics")
		}
		return s, nil
	}
	if prev, err = read(); err != nil {
		return nil, nil, err
	}
	select {
	case <-time.After(interval):
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	cur, err = read()
	return prev, cur, err
}

// topOnce prints one frame.
func topOnce(ctx context.Context, g *globals, o topOptions) error {
	prev, cur, err := readTwice(ctx, o.url, o.interval, g.timeout)
	if err != nil {
		return err
	}
	width := o.width
	if width <= 0 {
		width = terminalWidth(g.stdout, 100)
	}
	_, err = io.WriteString(g.stdout, topview.Render(topview.Build(prev, cur), width))
	return err
}

// terminalWidth is w's width when it is a terminal, else def.
func terminalWidth(w io.Writer, def int) int {
	if f, ok := w.(*os.File); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			return cols
		}
	}
	return def
}

// topModel is the bubbletea model of top: it reads the page every
// interval and draws topview's frame.
type topModel struct {
	url           string
	interval      time.Duration
	client        *http.Client
	ctx           context.Context
	prev, cur     *scrape.Snapshot
	err           error
	width, height int
}

type snapMsg struct {
	s   *scrape.Snapshot
	err error
}

type tickMsg struct{}

// fetch reads the page within one interval (at least a second).
func (m *topModel) fetch() tea.Msg {
	ctx, cancel := context.WithTimeout(m.ctx, max(m.interval, time.Second))
	defer cancel()
	s, err := scrape.Fetch(ctx, m.client, m.url)
	return snapMsg{s, err}
}

func (m *topModel) Init() tea.Cmd { return m.fetch }

func (m *topModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyMsg:
		switch msg.String() {
		case "q", "ctrl+c", "esc":
			return m, tea.Quit
		}
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case snapMsg:
		if msg.err != nil {
			m.err = msg.err
		} else {
			m.prev, m.cur, m.err = m.cur, msg.s, nil
		}
		return m, tea.Tick(m.interval, func(time.Time) tea.Msg { return tickMsg{} })
	case tickMsg:
		return m, m.fetch
	}
	return m, nil
}

var (
	topTitle  = lipgloss.NewStyle().Bold(true)
	topFooter = lipgloss.NewStyle().Faint(true)
	topError  = lipgloss.NewStyle().Foreground(lipgloss.Color("9"))
)

func (m *topModel) View() string {
	width := m.width
	if width <= 0 {
		width = 100
	}
	var lines []string
	if m.cur == nil {
		lines = []string{topTitle.Render("wheelmq top"), "", "reading " + m.url + " ..."}
	} else {
		lines = strings.Split(strings.TrimRight(topview.Render(topview.Build(m.prev, m.cur), width), "\n"), "\n")
		for i, l := range lines {
			if i == 0 || l == "TIMERS" || l == "STORE" || strings.HasPrefix(l, "STAGE ") {
				lines[i] = topTitle.Render(l)
			}
		}
	}
	lines = append(lines, "")
	if m.err != nil {
		lines = append(lines, topError.Render(oneLine("cannot read "+m.url+": "+m.err.Error())))
	}
	lines = append(lines, topFooter.Render(fmt.Sprintf("q quit · %s every %s", m.url, m.interval)))
	if m.height > 1 && len(lines) > m.height { // keep the head and the footer
		lines = append(lines[:m.height-1], lines[len(lines)-1])
	}
	return strings.Join(lines, "\n")
}
