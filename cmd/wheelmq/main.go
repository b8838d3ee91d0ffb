// Command wheelmq runs a wheelmq broker with an embedded name server.
//
//	wheelmq            broker + embedded name server (the default)
//	wheelmq broker     broker only (register with --namesrv)
//	wheelmq namesrv    name server only (its KV configuration in <--data>/namesrv)
//
// Every flag can also be set through the environment as WHEELMQ_<FLAG>, with
// dashes as underscores (WHEELMQ_DATA, WHEELMQ_NAMESRV_LISTEN, ...); a flag
// on the command line wins over the environment, which wins over the
// configuration file given with --config (a RocketMQ broker.conf, or YAML
// with the flag names as keys; see docs/operations.md for the mapping). Bad flags are all reported
// at once, with exit code 2. SIGTERM or SIGINT stops the broker cleanly
// (docs/operations.md, "Stopping"): new requests are refused with
// SYSTEM_BUSY, every request taken is answered with its true result, the
// stages persist their state and the stores are flushed and closed; it
// exits 0, or 1 when the stop took longer than 30 s or a stage did not
// stop in time.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/term"

	"github.com/wheelmq/wheelmq/cmd/internal/brokerconf"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr, signalContext()))
}

func signalContext() context.Context {
	ctx, _ := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	return ctx
}

// run is main without the process exit, for tests.
func run(args []string, stderr io.Writer, ctx context.Context) int {
	cfg, err := parseArgs(args, os.LookupEnv, stderr)
	if errors.Is(err, errHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "wheelmq: %v\n", err)
		return 2
	}
	log := newLogger(stderr, cfg.logLevel, cfg.logFormat)
	cfg.node.Logger = log
	logConfigFile(log, cfg.config)
	cfg.node.Broker.Logger = log
	cfg.node.Broker.SetLogLevel = setLogLevel
	n, err := process.Start(cfg.node)
	if err != nil {
		log.Error().Err(err).Msg("start failed")
		return 1
	}
	<-ctx.Done()
	log.Info().Msg("shutting down")
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Stop(stopCtx); err != nil {
		log.Error().Err(err).Msg("shutdown incomplete")
		return 1
	}
	return 0
}

// logConfigFile reports the configuration file read: one warning per key
// that sets nothing, naming it, and a summary.
func logConfigFile(log zerolog.Logger, f *brokerconf.File) {
	if f == nil {
		return
	}
	ignored := make([]string, 0, len(f.Ignored))
	for _, ig := range f.Ignored {
		ignored = append(ignored, ig.Key)
		log.Warn().Str("file", f.Path).Int("line", ig.Line).Str("key", ig.Key).Str("reason", ig.Reason).
			Msg("configuration key ignored")
	}
	log.Info().Str("file", f.Path).Int("settings", len(f.Settings)).Strs("ignored", ignored).
		Msg("configuration file read (flags and WHEELMQ_* override it)")
}

// newLogger logs human-readable to a terminal, JSON otherwise. The level
// is zerolog's global one (the logger itself passes every level), so that
// UPDATE_BROKER_CONFIG can change it while the process runs
// (setLogLevel); it covers the name server's logs too.
func newLogger(w io.Writer, level zerolog.Level, format string) zerolog.Logger {
	out := w
	if f, ok := w.(*os.File); (ok && term.IsTerminal(int(f.Fd())) && format == "auto") || format == "console" {
		out = zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339Nano}
	}
	setLogLevel(level)
	return zerolog.New(out).With().Timestamp().Logger()
}

// setLogLevel is the process's log level switch (pipeline.Config.SetLogLevel).
func setLogLevel(l zerolog.Level) { zerolog.SetGlobalLevel(l) }
