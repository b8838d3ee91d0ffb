package main

// wheelctl user: RocketMQ 5.3's ACL 2.0 users (AUTH_*_USER 3001-3005), with
// mqadmin's options (createUser -u -p -t, updateUser -u -p -t -s,
// deleteUser -u, getUser -u, listUser -f). A change goes to every master
// broker (of --cluster), or to --broker; a password is never printed.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/wheelmq/wheelmq/cmd/internal/admin"
	"github.com/wheelmq/wheelmq/storage/adminbody"
)

func newUserCmd(g *globals) *cobra.Command {
	return groupCmd("user", "Create, update, delete, get and list ACL 2.0 users (RocketMQ 5.3 AUTH_*_USER)",
		newUserCreateCmd(g), newUserUpdateCmd(g), newUserDeleteCmd(g), newUserGetCmd(g), newUserListCmd(g))
}

// passwordHelp is the --password flag's help.
const passwordHelp = "the password; - reads it from standard input (a prompt without echo on a terminal). " +
	"A value on the command line shows in the process list and the shell history: prefer -"

// readPassword returns the password of --password: the value, or with "-"
// one line of standard input (prompted for, without echo, on a terminal).
func readPassword(g *globals, value, user string) (string, error) {
	if value != "-" {
		return value, nil
	}
	if f, ok := g.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintf(g.stderr, "Password for %s: ", user)
		pw, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(g.stderr)
		if err != nil {
			return "", fmt.Errorf("read the password: %w", err)
		}
		fmt.Fprintf(g.stderr, "Again: ")
		again, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(g.stderr)
		if err != nil {
			return "", fmt.Errorf("read the password: %w", err)
		}
		if string(pw) != string(again) {
			return "", usagef("the passwords typed differ")
		}
		return string(pw), nil
	}
	line, err := bufio.NewReader(g.stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the password from standard input: %w", err)
	}
	pw := strings.TrimRight(line, "\r\n")
	if pw == "" {
		return "", usagef("no password on standard input")
	}
	return pw, nil
}

// onBrokers runs do on every broker, one line each ("<done> on B (addr)"),
// going on after a failure; it fails when any broker did.
func onBrokers(g *globals, brokers []admin.Broker, what, done string, do func(b admin.Broker) error) error {
	var failed []string
	for _, b := range brokers {
		if err := do(b); err != nil {
			fmt.Fprintf(g.stdout, "FAILED to %s on %s (%s): %v\n", what, b.Name, b.Addr, err)
			failed = append(failed, fmt.Sprintf("%s (%s): %v", b.Name, b.Addr, err))
			continue
		}
		fmt.Fprintf(g.stdout, "%s on %s (%s)\n", done, b.Name, b.Addr)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%s failed on %d of %d brokers: %s", what, len(failed), len(brokers), strings.Join(failed, "; "))
	}
	return nil
}

// fromBrokers gathers what read returns from each target master broker
// (--broker, or the masters of cluster), in order; the first error stops
// it.
func fromBrokers[T any](ctx context.Context, g *globals, cluster string, read func(s *admin.Session, b admin.Broker) ([]T, error)) ([]T, error) {
	s := g.session()
	defer s.Close()
	brokers, err := targetBrokers(ctx, s, g, cluster)
	if err != nil {
		return nil, err
	}
	var out []T
	for _, b := range brokers {
		got, err := read(s, b)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	return out, nil
}

func newUserCreateCmd(g *globals) *cobra.Command {
	var user, password, typ, cluster string
	c := &cobra.Command{
		Use:   "create --user NAME [--password PW|-] [--type Normal|Super]",
		Short: "Create a user on the brokers (AUTH_CREATE_USER, mqadmin createUser)",
		Long: `Create an ACL 2.0 user on every master broker (of --cluster), or on --broker. Its name is the
AccessKey its clients sign with and its password the SecretKey. Without --password the password is
read from standard input (a prompt without echo on a terminal). A Super user may do everything; a
Normal one what its ACL allows (wheelctl acl).`,
		Example: "  wheelctl user create --user alice --password -\n  echo \"$PW\" | wheelctl user create -u ops -t Super",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("password") {
				password = "-"
			}
			pw, err := readPassword(g, password, user)
			if err != nil {
				return err
			}
			s := g.session()
			defer s.Close()
			brokers, err := targetBrokers(cmd.Context(), s, g, cluster)
			if err != nil {
				return err
			}
			info := adminbody.UserInfo{Username: user, Password: pw, UserType: typ}
			return onBrokers(g, brokers, "create user "+user, "created user "+user, func(b admin.Broker) error {
				return s.CreateUser(cmd.Context(), b.Addr, info)
			})
		},
	}
	f := c.Flags()
	f.StringVarP(&user, "user", "u", "", "the user name (required)")
	f.StringVarP(&password, "password", "p", "", passwordHelp)
	f.StringVarP(&typ, "type", "t", "", "Normal (the default) or Super")
	f.StringVar(&cluster, "cluster", "", "the master brokers of this cluster")
	_ = c.MarkFlagRequired("user")
	_ = c.RegisterFlagCompletionFunc("type", fixedCompletion("Normal", "Super"))
	return c
}

func newUserUpdateCmd(g *globals) *cobra.Command {
	var user, password, typ, status, cluster string
	c := &cobra.Command{
		Use:   "update --user NAME [--password PW|-] [--type Normal|Super] [--status enable|disable]",
		Short: "Change a user's password, type or status (AUTH_UPDATE_USER, mqadmin updateUser)",
		Long: `Change an ACL 2.0 user on every master broker (of --cluster), or on --broker: its password
(--password -: from standard input), its type, or its status (a disabled user is refused as unknown).
What is not given stays as it is.`,
		Example: "  wheelctl user update -u alice --status disable\n  wheelctl user update -u alice --password -",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("password") && typ == "" && status == "" {
				return usagef("give --password, --type or --status")
			}
			pw := ""
			if cmd.Flags().Changed("password") {
				var err error
				if pw, err = readPassword(g, password, user); err != nil {
					return err
				}
				if pw == "" {
					return usagef("--password is empty")
				}
			}
			s := g.session()
			defer s.Close()
			brokers, err := targetBrokers(cmd.Context(), s, g, cluster)
			if err != nil {
				return err
			}
			info := adminbody.UserInfo{Username: user, Password: pw, UserType: typ, UserStatus: status}
			return onBrokers(g, brokers, "update user "+user, "updated user "+user, func(b admin.Broker) error {
				return s.UpdateUser(cmd.Context(), b.Addr, info)
			})
		},
	}
	f := c.Flags()
	f.StringVarP(&user, "user", "u", "", "the user name (required)")
	f.StringVarP(&password, "password", "p", "", passwordHelp)
	f.StringVarP(&typ, "type", "t", "", "Normal or Super")
	f.StringVarP(&status, "status", "s", "", "enable or disable")
	f.StringVar(&cluster, "cluster", "", "the master brokers of this cluster")
	_ = c.MarkFlagRequired("user")
	_ = c.RegisterFlagCompletionFunc("type", fixedCompletion("Normal", "Super"))
	_ = c.RegisterFlagCompletionFunc("status", fixedCompletion("enable", "disable"))
	return c
}

func newUserDeleteCmd(g *globals) *cobra.Command {
	var user, cluster string
	c := &cobra.Command{
		Use:   "delete --user NAME",
		Short: "Delete a user and its ACL (AUTH_DELETE_USER, mqadmin deleteUser)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s := g.session()
			defer s.Close()
			brokers, err := targetBrokers(cmd.Context(), s, g, cluster)
			if err != nil {
				return err
			}
			return onBrokers(g, brokers, "delete user "+user, "deleted user "+user, func(b admin.Broker) error {
				return s.DeleteUser(cmd.Context(), b.Addr, user)
			})
		},
	}
	c.Flags().StringVarP(&user, "user", "u", "", "the user name (required)")
	c.Flags().StringVar(&cluster, "cluster", "", "the master brokers of this cluster")
	_ = c.MarkFlagRequired("user")
	return c
}

// printUsers writes the users found on each broker, never a password.
func printUsers(g *globals, rows []userRow) error {
	tw := newTable(g)
	fmt.Fprintln(tw, "USER\tTYPE\tSTATUS\tBROKER")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.u.Username, r.u.UserType, r.u.UserStatus, r.b.Name)
	}
	return tw.Flush()
}

// userRow is one user on one broker.
type userRow struct {
	b admin.Broker
	u adminbody.UserInfo
}

func newUserGetCmd(g *globals) *cobra.Command {
	var user, cluster string
	c := &cobra.Command{
		Use:   "get --user NAME",
		Short: "Show a user: type and status, never the password (AUTH_GET_USER, mqadmin getUser)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rows, err := fromBrokers(cmd.Context(), g, cluster, func(s *admin.Session, b admin.Broker) ([]userRow, error) {
				u, err := s.GetUser(cmd.Context(), b.Addr, user)
				if err != nil || u == nil {
					return nil, wrapIf(err, "user %s on %s", user, b.Addr)
				}
				return []userRow{{b, *u}}, nil
			})
			if err != nil {
				return err
			}
			if len(rows) == 0 {
				return fmt.Errorf("no broker has a user %s", user)
			}
			return printUsers(g, rows)
		},
	}
	c.Flags().StringVarP(&user, "user", "u", "", "the user name (required)")
	c.Flags().StringVar(&cluster, "cluster", "", "the master brokers of this cluster")
	_ = c.MarkFlagRequired("user")
	return c
}

func newUserListCmd(g *globals) *cobra.Command {
	var filter, cluster string
	c := &cobra.Command{
		Use:   "list [--filter TEXT]",
		Short: "List the users of the brokers, without passwords (AUTH_LIST_USER, mqadmin listUser)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rows, err := fromBrokers(cmd.Context(), g, cluster, func(s *admin.Session, b admin.Broker) ([]userRow, error) {
				us, err := s.ListUsers(cmd.Context(), b.Addr, filter)
				if err != nil {
					return nil, fmt.Errorf("users of %s: %w", b.Addr, err)
				}
				rows := make([]userRow, 0, len(us))
				for _, u := range us {
					rows = append(rows, userRow{b, u})
				}
				return rows, nil
			})
			if err != nil {
				return err
			}
			if err := printUsers(g, rows); err != nil {
				return err
			}
			if len(rows) == 0 {
				fmt.Fprintln(g.stdout, "(no users)")
			}
			return nil
		},
	}
	c.Flags().StringVarP(&filter, "filter", "f", "", "only users whose name contains this")
	c.Flags().StringVar(&cluster, "cluster", "", "the master brokers of this cluster")
	return c
}

// wrapIf is fmt.Errorf(format+": %w", args..., err), or nil when err is.
func wrapIf(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}
