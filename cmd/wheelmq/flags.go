package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/storage/corruption"
)

// errHelp means -h was asked for and usage was printed.
var errHelp = errors.New("help requested")

type options struct {
	node      process.Config
	logLevel  zerolog.Level
	logFormat string
}

// parseArgs reads the mode, the flags and the WHEELMQ_* environment, and
// reports every problem at once.
func parseArgs(args []string, env func(string) (string, bool), stderr io.Writer) (options, error) {
	mode := "all"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		mode, args = args[0], args[1:]
	}
	var problems []string
	switch mode {
	case "all", "broker", "namesrv":
	default:
		problems = append(problems, fmt.Sprintf("unknown mode %q (want broker or namesrv, or none for both)", mode))
	}
	def := pipeline.DefaultConfig()
	fs := flag.NewFlagSet("wheelmq", flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := fs.String("data", def.DataDir, "store root directory")
	listen := fs.String("listen", def.Listen, "broker remoting address (in namesrv mode: the name server's address)")
	nsListen := fs.String("namesrv-listen", "0.0.0.0:9876", "embedded name server address (empty: none)")
	nsAddrs := fs.String("namesrv", "", "name servers to register with, ';'-separated (default: the embedded one)")
	metrics := fs.String("metrics-listen", "127.0.0.1:9108", "HTTP address for /metrics and /healthz (empty: none)")
	advertise := fs.String("advertise", "", "address published in routes (default: the listen address)")
	name := fs.String("broker-name", def.BrokerName, "broker name")
	cluster := fs.String("cluster", def.Cluster, "cluster name")
	flush := fs.String("flush", "async", "flush mode: async or sync (group commit)")
	autoCreate := fs.Bool("auto-create-topic", def.AutoCreateTopic, "let producers create topics through TBW102")
	autoGroup := fs.Bool("auto-create-group", def.AutoCreateGroup,
		"create unknown consumer groups on their first heartbeat (else their pulls are refused)")
	maxMsg := fs.Int("max-message-size", def.MaxMessageSize, "largest accepted message body in bytes")
	var onCorruption corruption.Policy
	fs.Var(&onCorruption, "on-corruption",
		"damaged records found while running: skip (count, log, go on) or stop the stage that meets them")
	indexOn := fs.Bool("index", def.Index, "index messages by KEYS and UNIQ_KEY (QUERY_MESSAGE, VIEW_MESSAGE_BY_ID)")
	txTimeout := fs.Duration("transaction-timeout", def.TransactionTimeout,
		"age of an open transaction before its producer group is first asked about it")
	txInterval := fs.Duration("transaction-check-interval", def.TransactionCheckInterval,
		"pause between two checks of one open transaction")
	txMax := fs.Int("transaction-check-max", def.TransactionCheckMax, "checks before an open transaction is given up")
	level := fs.String("log-level", "info", "log level: debug, info, warn, error")
	format := fs.String("log-format", "auto", "log format: auto (console on a terminal, else JSON), console, json")
	fs.VisitAll(func(f *flag.Flag) {
		key := "WHEELMQ_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := env(key); ok {
			if err := f.Value.Set(v); err != nil {
				problems = append(problems, fmt.Sprintf("%s=%q: %v", key, v, err))
			}
		}
	})
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return options{}, errHelp
		}
		problems = append(problems, err.Error())
	}
	if fs.NArg() > 0 {
		problems = append(problems, fmt.Sprintf("unexpected arguments: %v", fs.Args()))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	problems = append(problems, inapplicable(mode, set)...)
	if mode == "namesrv" && set["listen"] {
		// The name server's own address: the flag users reach for first.
		*nsListen = *listen
	}
	var o options
	lvl, err := zerolog.ParseLevel(*level)
	if err != nil || *level == "" {
		problems = append(problems, fmt.Sprintf("log level %q: want debug, info, warn or error", *level))
	}
	o.logLevel = lvl
	switch *format {
	case "auto", "console", "json":
	default:
		problems = append(problems, fmt.Sprintf("log format %q: want auto, console or json", *format))
	}
	o.logFormat = *format
	fm, err := writer.ParseFlushMode(*flush)
	if err != nil {
		problems = append(problems, err.Error())
	}
	bc := def
	bc.DataDir, bc.Listen, bc.Advertise = *data, *listen, *advertise
	bc.BrokerName, bc.Cluster, bc.Flush, bc.AutoCreateTopic = *name, *cluster, fm, *autoCreate
	bc.MaxMessageSize, bc.Index, bc.OnCorruption, bc.AutoCreateGroup = *maxMsg, *indexOn, onCorruption, *autoGroup
	bc.TransactionTimeout, bc.TransactionCheckInterval, bc.TransactionCheckMax = *txTimeout, *txInterval, *txMax
	if bc.MaxFrame < bc.MaxMessageSize+256<<10 {
		bc.MaxFrame = bc.MaxMessageSize + 256<<10
	}
	for _, a := range strings.Split(*nsAddrs, ";") {
		if a = strings.TrimSpace(a); a != "" {
			bc.NameServers = append(bc.NameServers, a)
		}
	}
	o.node = process.Config{Broker: bc, RunBroker: mode != "namesrv", MetricsListen: *metrics}
	if mode != "broker" {
		o.node.NamesrvListen = *nsListen
	}
	if mode == "broker" && len(bc.NameServers) == 0 {
		problems = append(problems, "broker mode needs --namesrv")
	}
	if mode == "namesrv" && *nsListen == "" {
		problems = append(problems, "namesrv mode needs --namesrv-listen")
	}
	if o.node.RunBroker {
		if err := bc.Validate(); err != nil {
			problems = append(problems, strings.Split(err.Error(), "\n")...)
		}
	}
	if len(problems) > 0 {
		return o, fmt.Errorf("invalid configuration:\n  - %s", strings.Join(problems, "\n  - "))
	}
	return o, nil
}

// modeFlags lists, per mode, the flags that mean something in it.
var modeFlags = map[string][]string{
	"namesrv": {"listen", "namesrv-listen", "metrics-listen", "log-level", "log-format"},
	"broker": {"data", "listen", "namesrv", "metrics-listen", "advertise", "broker-name", "cluster", "flush",
		"auto-create-topic", "auto-create-group", "max-message-size", "index", "on-corruption", "transaction-timeout",
		"transaction-check-interval", "transaction-check-max", "log-level", "log-format"},
}

// inapplicable reports the command-line flags that mean nothing in mode
// (the environment may carry settings for other modes, so WHEELMQ_*
// variables are not checked).
func inapplicable(mode string, set map[string]bool) []string {
	allowed, ok := modeFlags[mode]
	if !ok {
		return nil
	}
	var out []string
	for name := range set {
		if !slices.Contains(allowed, name) {
			out = append(out, fmt.Sprintf("--%s means nothing in %s mode (it takes: --%s)", name, mode,
				strings.Join(allowed, ", --")))
		}
	}
	if mode == "namesrv" && set["listen"] && set["namesrv-listen"] {
		out = append(out, "namesrv mode: give --listen or --namesrv-listen, not both")
	}
	slices.Sort(out)
	return out
}
