package main

// wheelctl acl: RocketMQ 5.3's ACL 2.0 policies (AUTH_*_ACL 3006-3010),
// with mqadmin's options (createAcl/updateAcl -s -r -a -i -d, deleteAcl
// -s -r, getAcl -s, listAcl -s -r). A change goes to every master broker
// (of --cluster), or to --broker.

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wheelmq/wheelmq/cmd/internal/admin"
	"github.com/wheelmq/wheelmq/storage/adminbody"
)

func newACLCmd(g *globals) *cobra.Command {
	return groupCmd("acl", "Create, update, delete, get and list ACL 2.0 policies (RocketMQ 5.3 AUTH_*_ACL)",
		newACLPutCmd(g, false), newACLPutCmd(g, true), newACLDeleteCmd(g), newACLGetCmd(g), newACLListCmd(g))
}

// splitList splits a comma list as mqadmin does (trimmed, empty parts
// dropped).
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// subjectOf takes "User:alice" as it is and "alice" as "User:alice".
func subjectOf(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || strings.Contains(s, ":") {
		return s
	}
	return "User:" + s
}

func newACLPutCmd(g *globals, update bool) *cobra.Command {
	var subject, resources, actions, sourceIPs, decision, cluster string
	use, short, what := "create", "Give a user rules on topics and groups (AUTH_CREATE_ACL, mqadmin createAcl)", "create"
	if update {
		use, short, what = "update", "Change a user's rules (AUTH_UPDATE_ACL, mqadmin updateAcl)", "update"
	}
	c := &cobra.Command{
		Use:   use + " --subject User:NAME --resources R[,R...] --actions A[,A...] --decision Allow|Deny [--source-ips IP|CIDR[,...]]",
		Short: short,
		Long: `Add one rule per resource to a user's ACL on every master broker (of --cluster), or on --broker.
A rule on a resource the ACL has replaces it; create and update do the same, as in RocketMQ.

  resources   Topic:NAME, Topic:PREFIX*, Topic:*, the same with Group, or * (everything)
  actions     Pub, Sub, All (Pub and Sub); Create, Update, Delete, Get, List are kept but grant
              nothing on wheelmq: admin requests need a Super user
  source-ips  addresses or CIDR prefixes the rule applies from (default: everywhere)
  decision    Allow or Deny

wheelmq denies what no rule allows, and a Deny that matches wins over every Allow.`,
		Example: "  wheelctl acl " + use + " -s User:alice -r Topic:orders*,Group:billing -a Pub,Sub -d Allow\n" +
			"  wheelctl acl " + use + " -s alice -r Topic:orders-secret -a All -d Deny -i 10.0.0.0/8",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, acts := splitList(resources), splitList(actions)
			if len(res) == 0 || len(acts) == 0 {
				return usagef("give --resources and --actions")
			}
			var entries []adminbody.PolicyEntryInfo
			for _, r := range res {
				entries = append(entries, adminbody.PolicyEntryInfo{Resource: r, Actions: acts, SourceIps: splitList(sourceIPs),
					Decision: decision})
			}
			info := adminbody.AclInfo{Subject: subjectOf(subject), Policies: []adminbody.PolicyInfo{{Entries: entries}}}
			s := g.session()
			defer s.Close()
			brokers, err := targetBrokers(cmd.Context(), s, g, cluster)
			if err != nil {
				return err
			}
			return onBrokers(g, brokers, what+" ACL of "+info.Subject, what+"d ACL of "+info.Subject, func(b admin.Broker) error {
				if update {
					return s.UpdateACL(cmd.Context(), b.Addr, info)
				}
				return s.CreateACL(cmd.Context(), b.Addr, info)
			})
		},
	}
	f := c.Flags()
	f.StringVarP(&subject, "subject", "s", "", "the user, User:NAME or NAME (required)")
	f.StringVarP(&resources, "resources", "r", "", "resources, comma separated (required)")
	f.StringVarP(&actions, "actions", "a", "", "actions, comma separated (required)")
	f.StringVarP(&sourceIPs, "source-ips", "i", "", "addresses or CIDR prefixes, comma separated")
	f.StringVarP(&decision, "decision", "d", "", "Allow or Deny (required)")
	f.StringVar(&cluster, "cluster", "", "the master brokers of this cluster")
	for _, name := range []string{"subject", "resources", "actions", "decision"} {
		_ = c.MarkFlagRequired(name)
	}
	_ = c.RegisterFlagCompletionFunc("decision", fixedCompletion("Allow", "Deny"))
	_ = c.RegisterFlagCompletionFunc("actions", fixedCompletion("Pub", "Sub", "All", "Create", "Update", "Delete", "Get", "List"))
	return c
}

func newACLDeleteCmd(g *globals) *cobra.Command {
	var subject, resources, policyType, cluster string
	c := &cobra.Command{
		Use:   "delete --subject User:NAME [--resources R[,R...]] [--policy-type Custom|Default]",
		Short: "Delete a user's ACL, or its rules on some resources (AUTH_DELETE_ACL, mqadmin deleteAcl)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			subj := subjectOf(subject)
			res := splitList(resources)
			s := g.session()
			defer s.Close()
			brokers, err := targetBrokers(cmd.Context(), s, g, cluster)
			if err != nil {
				return err
			}
			if len(res) == 0 {
				return onBrokers(g, brokers, "delete ACL of "+subj, "deleted ACL of "+subj, func(b admin.Broker) error {
					return s.DeleteACL(cmd.Context(), b.Addr, subj, policyType, "")
				})
			}
			for _, r := range res {
				if err := onBrokers(g, brokers, "delete rule on "+r+" of "+subj, "deleted rule on "+r+" of "+subj,
					func(b admin.Broker) error { return s.DeleteACL(cmd.Context(), b.Addr, subj, policyType, r) }); err != nil {
					return err
				}
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVarP(&subject, "subject", "s", "", "the user, User:NAME or NAME (required)")
	f.StringVarP(&resources, "resources", "r", "", "only the rules on these resources, comma separated")
	f.StringVar(&policyType, "policy-type", "", "the policy of those rules: Custom (the default) or Default")
	f.StringVar(&cluster, "cluster", "", "the master brokers of this cluster")
	_ = c.MarkFlagRequired("subject")
	_ = c.RegisterFlagCompletionFunc("policy-type", fixedCompletion("Custom", "Default"))
	return c
}

// aclRow is one ACL on one broker.
type aclRow struct {
	b admin.Broker
	a adminbody.AclInfo
}

// printACLs writes one line per rule.
func printACLs(g *globals, rows []aclRow) error {
	tw := newTable(g)
	fmt.Fprintln(tw, "SUBJECT\tPOLICY\tRESOURCE\tACTIONS\tSOURCE IPS\tDECISION\tBROKER")
	for _, r := range rows {
		for _, p := range r.a.Policies {
			for _, e := range p.Entries {
				ips := strings.Join(e.SourceIps, ",")
				if ips == "" {
					ips = "*"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.a.Subject, p.PolicyType, e.Resource,
					strings.Join(e.Actions, ","), ips, e.Decision, r.b.Name)
			}
		}
	}
	return tw.Flush()
}

func newACLGetCmd(g *globals) *cobra.Command {
	var subject, cluster string
	c := &cobra.Command{
		Use:   "get --subject User:NAME",
		Short: "Show a user's rules (AUTH_GET_ACL, mqadmin getAcl)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			subj := subjectOf(subject)
			rows, err := fromBrokers(cmd.Context(), g, cluster, func(s *admin.Session, b admin.Broker) ([]aclRow, error) {
				a, err := s.GetACL(cmd.Context(), b.Addr, subj)
				if err != nil || a == nil {
					return nil, wrapIf(err, "ACL of %s on %s", subj, b.Addr)
				}
				return []aclRow{{b, *a}}, nil
			})
			if err != nil {
				return err
			}
			if len(rows) == 0 {
				fmt.Fprintf(g.stdout, "%s has no ACL: it may do nothing (unless it is a Super user)\n", subj)
				return nil
			}
			return printACLs(g, rows)
		},
	}
	c.Flags().StringVarP(&subject, "subject", "s", "", "the user, User:NAME or NAME (required)")
	c.Flags().StringVar(&cluster, "cluster", "", "the master brokers of this cluster")
	_ = c.MarkFlagRequired("subject")
	return c
}

func newACLListCmd(g *globals) *cobra.Command {
	var subject, resource, cluster string
	c := &cobra.Command{
		Use:   "list [--subject TEXT] [--resources TEXT]",
		Short: "List the rules of the brokers (AUTH_LIST_ACL, mqadmin listAcl)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rows, err := fromBrokers(cmd.Context(), g, cluster, func(s *admin.Session, b admin.Broker) ([]aclRow, error) {
				as, err := s.ListACLs(cmd.Context(), b.Addr, subject, resource)
				if err != nil {
					return nil, fmt.Errorf("ACLs of %s: %w", b.Addr, err)
				}
				rows := make([]aclRow, 0, len(as))
				for _, a := range as {
					rows = append(rows, aclRow{b, a})
				}
				return rows, nil
			})
			if err != nil {
				return err
			}
			if err := printACLs(g, rows); err != nil {
				return err
			}
			if len(rows) == 0 {
				fmt.Fprintln(g.stdout, "(no ACLs)")
			}
			return nil
		},
	}
	c.Flags().StringVarP(&subject, "subject", "s", "", "only subjects that contain this")
	c.Flags().StringVarP(&resource, "resources", "r", "", "only rules whose resource contains this")
	c.Flags().StringVar(&cluster, "cluster", "", "the master brokers of this cluster")
	return c
}
