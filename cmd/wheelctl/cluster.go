package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wheelmq/wheelmq/cmd/internal/admin"
)

func newClusterCmd(g *globals) *cobra.Command {
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List brokers with address, version, uptime, TPS and timer backlog",
		Long: `List the brokers the name server knows (GET_BROKER_CLUSTER_INFO) with each broker's runtime
figures (GET_BROKER_RUNTIME_INFO): version, uptime, put/get TPS, and the timer backlog
(timerOffsetBehind: timer messages stored but not yet in the timer wheel), and with replication
the role (master, replica; fenced), the master epoch and the sync-state set (replica ids).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s := g.session()
			defer s.Close()
			brokers, err := s.Brokers(cmd.Context(), g.namesrv)
			if err != nil {
				return fmt.Errorf("list brokers: %w", err)
			}
			if asJSON {
				return printClusterJSON(cmd.Context(), g, s, brokers)
			}
			tw := newTable(g)
			fmt.Fprintln(tw, "CLUSTER\tBROKER\tBID\tADDR\tVERSION\tUPTIME\tIN TPS\tOUT TPS\tTIMER BACKLOG\tROLE\tEPOCH\tSSS")
			var notes []string
			for _, b := range brokers {
				info, err := s.RuntimeInfo(cmd.Context(), b.Addr)
				var ns *admin.NotServedError
				cols := []string{"-", "-", "-", "-", "-", "-", "-", "-"}
				switch {
				case err == nil:
					cols = runtimeColumns(info, b.ID, time.Now())
				case errors.As(err, &ns):
					notes = append(notes, ns.Error())
				default:
					cols[0] = "unreachable"
					notes = append(notes, err.Error())
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", b.Cluster, b.Name, b.ID, b.Addr, strings.Join(cols, "\t"))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(brokers) == 0 {
				fmt.Fprintf(g.stdout, "(the name server at %s knows no broker)\n", g.namesrv)
			}
			for _, n := range notes {
				fmt.Fprintln(g.stdout, n)
			}
			return nil
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print the brokers as a JSON array (clusterjson.go has the fields)")
	return groupCmd("cluster", "Show the brokers the name server knows", list)
}

// runtimeColumns picks version, uptime, in/out TPS and timer backlog from
// a GET_BROKER_RUNTIME_INFO table (facts 11.16).
func runtimeColumns(info map[string]string, brokerID int64, now time.Time) []string {
	get := func(k string) string {
		if v := info[k]; v != "" {
			return v
		}
		return "-"
	}
	first := func(k string) string { // TPS values are "10s 60s 600s"
		f := strings.Fields(info[k])
		if len(f) == 0 {
			return "-"
		}
		if v, err := strconv.ParseFloat(f[0], 64); err == nil {
			return strconv.FormatFloat(v, 'f', 1, 64)
		}
		return f[0]
	}
	uptime := "-"
	if boot, err := strconv.ParseInt(info["bootTimestamp"], 10, 64); err == nil && boot > 0 {
		uptime = now.Sub(time.UnixMilli(boot)).Round(time.Second).String()
	}
	role := admin.Role(info, brokerID)
	return []string{get("brokerVersionDesc"), uptime, first("putTps"), first("getTransferredTps"), get("timerOffsetBehind"),
		role, get("haEpoch"), get("haSyncStateSet")}
}
