package process

// The corrections start-up made to the positions derived from the
// CommitLog (actors/pipeline's reconcile, storage.Corrections) on
// /healthz, and their acknowledgement (docs/operations.md, "Recovery").

import (
	"fmt"
	"io"
	"net"
	"net/http"
)

// writeCorrections adds to /healthz one line per kind of correction not yet
// acknowledged: "reconciled: consumer_offset count=2 last="t@g/0" from=3
// to=1 dropped=0 commitlog_end=462" (last names the latest one's subject,
// when its kind has several). They do not make the broker
// unhealthy: it serves what its CommitLog holds.
func (n *Node) writeCorrections(w io.Writer) {
	if n.broker == nil {
		return
	}
	pending := n.broker.Pipeline().Store().Corrections.Pending()
	for _, p := range pending {
		c := p.Last
		subject := ""
		if c.Subject != "" {
			subject = fmt.Sprintf(" last=%q", c.Subject)
		}
		_, _ = fmt.Fprintf(w, "reconciled: %s count=%d%s from=%d to=%d dropped=%d commitlog_end=%d\n",
			p.What, p.Count, subject, c.From, c.To, c.Dropped, c.CommitLogEnd)
	}
	if len(pending) > 0 {
		_, _ = fmt.Fprintf(w, "reconciled: the CommitLog holds less than the files derived from it claimed; "+
			"see the \"reconciled:\" warn logs, then POST /healthz/acknowledge\n")
	}
}

// acknowledge serves POST /healthz/acknowledge: it clears the corrections
// /healthz shows (wheelmq_store_reconciled_total keeps counting) and
// answers how many there were. Only from a loopback address, as a change
// on an endpoint that checks no credentials.
func (n *Node) acknowledge(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		http.Error(w, "acknowledge only from a loopback address", http.StatusForbidden)
		return
	}
	if n.broker == nil {
		http.Error(w, "this process runs no broker", http.StatusNotFound)
		return
	}
	k := n.broker.Pipeline().Store().Corrections.Acknowledge()
	n.cfg.Logger.Info().Int64("corrections", k).Str("remote", r.RemoteAddr).Msg("reconciled corrections acknowledged")
	_, _ = fmt.Fprintf(w, "acknowledged %d corrections\n", k)
}
