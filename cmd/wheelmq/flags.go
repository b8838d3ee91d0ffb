package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/access"
	"github.com/wheelmq/wheelmq/actors/controller"
	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/cmd/internal/brokerconf"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/grpcgw"
	"github.com/wheelmq/wheelmq/storage/commitlog"
	"github.com/wheelmq/wheelmq/storage/corruption"
)

// errHelp means -h was asked for and usage was printed.
var errHelp = errors.New("help requested")

type options struct {
	node      process.Config
	logLevel  zerolog.Level
	logFormat string
	// config is the configuration file read (nil: none); its ignored keys
	// are logged once the logger exists.
	config *brokerconf.File
}

// parseArgs reads the mode, the flags, the configuration file (--config or
// WHEELMQ_CONFIG) and the WHEELMQ_* environment, and reports every problem
// at once. Precedence: file < environment < command line.
func parseArgs(args []string, env func(string) (string, bool), stderr io.Writer) (options, error) {
	var problems []string
	def := pipeline.DefaultConfig()
	fs := flag.NewFlagSet("wheelmq", flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := fs.String("data", def.DataDir, "data directory: the broker's store, and the name server's files in <data>/namesrv")
	listen := fs.String("listen", def.Listen, "broker remoting address (in namesrv mode: the name server's address)")
	nsListen := fs.String("namesrv-listen", "0.0.0.0:9876", "embedded name server address (empty: none)")
	ctlListen := fs.String("controller-listen", "", "raft address of the replication controller embedded in the name server (empty: no controller); data in <data>/controller")
	ctlPeers := fs.String("controller-peers", "", "raft addresses of every controller, ';'-separated, the same list on each (default: only --controller-listen)")
	ctlSecret := fs.String("controller-secret-file", "",
		"file holding the controllers' cluster secret (the same on each, >= 16 bytes, e.g. openssl rand -hex 32 > file; chmod 600): every raft connection must prove it")
	ctlInsecure := fs.Bool("controller-insecure", false,
		"let the raft port listen on a non-loopback address with neither --controller-secret-file nor mutual TLS (anyone reaching it can elect masters)")
	nsAddrs := fs.String("namesrv", "", "name servers to register with, ';'-separated (default: the embedded one)")
	routeWait := fs.Duration("route-wait", def.RouteWait,
		"longest wait, before answering a request that made a topic (a send that auto-created it), for the name servers to have its route")
	metrics := fs.String("metrics-listen", "127.0.0.1:9108", "HTTP address for /metrics and /healthz (empty: none)")
	consoleOn := fs.Bool("console", true, "serve the web console at / on the metrics address")
	consoleHosts := fs.String("console-hosts", "",
		"comma-separated host names (name or name:port) the console is reached by, besides its address and localhost; other Host headers are refused (DNS rebinding)")
	consoleInsecure := fs.Bool("console-insecure", false,
		"let the console listen on a non-loopback --metrics-listen with neither an ACL nor mutual TLS (refused at start otherwise: anyone on the network would be admin)")
	pprofOn := fs.Bool("pprof", false, "also serve /debug/pprof on the metrics address (profiles expose internals: keep it off where others can reach the port)")
	advertise := fs.String("advertise", "", "address published in routes (default: the listen address)")
	name := fs.String("broker-name", def.BrokerName, "broker name")
	cluster := fs.String("cluster", def.Cluster, "cluster name")
	flush := fs.String("flush", "async", "flush mode: async or sync (group commit)")
	autoCreate := fs.Bool("auto-create-topic", def.AutoCreateTopic, "let producers create topics through TBW102")
	autoGroup := fs.Bool("auto-create-group", def.AutoCreateGroup,
		"create unknown consumer groups on their first heartbeat (else their pulls are refused)")
	typeCheck := fs.Bool("topic-message-type-check", def.TopicMessageTypeCheck,
		"refuse a message whose type (FIFO, DELAY, TRANSACTION, NORMAL) its topic's message.type does not take (RocketMQ's enableTopicMessageTypeCheck)")
	mixedType := fs.Bool("mixed-message-type", def.MixedMessageType,
		"let topics be given message.type=MIXED (RocketMQ's enableMixedMessageType)")
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
	deqWorkers := fs.Int("timer-dequeue-workers", def.TimerDequeueWorkers,
		"timer dequeue_message stages that read and rebuild due timers side by side (1..8)")
	schedMin := fs.Duration("timer-schedule-min-interval", def.ScheduleMinInterval,
		"shortest interval between two fires of a recurring timer (WHEEL_SCHEDULE); shorter schedules are refused")
	liteExpiration := fs.Duration("lite-expiration", def.LiteExpiration,
		"how long a lite topic of a LITE topic without a lite.topic.expiration attribute lives with no new message before it is deleted (0: forever; docs/lite.md)")
	maxLiteSubs := fs.Int("max-lite-subscriptions", 2000,
		"lite topics one lite consumer (LitePushConsumer, LiteSimpleConsumer, remoting) may subscribe to (docs/lite.md)")
	liteResident := fs.Int("lite-resident-max", 100000,
		"lite topics kept in memory: past it those with no subscriber and nothing in flight go to the spill store, least recently written first (0: no bound; docs/lite.md)")
	liteIdle := fs.Duration("lite-idle-evict", 0,
		"evict a lite topic with no subscriber and nothing in flight after this long without a new message (0: never; docs/lite.md)")
	pullWorkers := fs.Int("pull-workers", def.PullWorkers,
		"pull_read stages that read for pulls side by side, so that one slow read holds only its own (1..8)")
	maxReqs := fs.Int64("max-conn-requests", def.MaxInflightPerConn,
		"requests of every kind one connection may have waiting for an answer before it gets SYSTEM_BUSY (parked long polls included)")
	maxParked := fs.Int("max-conn-parked-pulls", def.MaxParkedPullsPerConn,
		"long polls one connection may have parked; past it a long poll that finds nothing is answered at once (PULL_NOT_FOUND)")
	maxOutput := fs.Int64("max-conn-output", netloop.DefaultMaxOutput,
		"bytes of answers a connection may leave unread before its requests get SYSTEM_BUSY; 4x this closes it (-1: no caps)")
	idleTimeout := fs.Duration("idle-conn-timeout", netloop.DefaultIdleTimeout,
		"close a remoting connection that has sent nothing this long after connecting (TLS: no request after its handshake); -1s: never")
	slowTimeout := fs.Duration("slow-conn-timeout", netloop.DefaultStallTimeout,
		"close a connection whose unread answers stay above --max-conn-output this long (-1s: never)")
	queues := fs.Int("default-topic-queues", int(def.DefaultQueueNums), "queues of a topic created on first send (TBW102)")
	configPath := fs.String("config", "", "configuration file: a RocketMQ broker.conf, or YAML (.yaml) with flag names as keys")
	ret := fs.Duration("retention", def.Retention, "keep CommitLog segments this long after their newest message (0: no limit by age)")
	retAt := fs.String("retention-at", def.RetentionAt, "when expired segments are deleted: local HH:MM (each opens an hour; several with ';') or any")
	retEvery := fs.Duration("retention-interval", 10*time.Second, "how often retention looks for segments to delete")
	cleanRatio := fs.Float64("disk-clean-ratio", def.DiskCleanRatio, "disk use at which expired segments are deleted at once")
	fullRatio := fs.Float64("disk-full-ratio", def.DiskFullRatio, "disk use at which sends are refused (SERVICE_NOT_AVAILABLE)")
	segSize := fs.Int64("commitlog-segment-size", commitlog.DefaultSegmentSize, "CommitLog segment file size in bytes (must match an existing data directory)")
	orderMsg := fs.Bool("order-message-enable", false,
		"name server: put a topic's ORDER_TOPIC_CONFIG value into its routes as orderTopicConf (RocketMQ's orderMessageEnable)")
	aclFile := fs.String("acl-file", "",
		"RocketMQ plain_acl.yml (ACL 1.0 format): every request on every port must be signed by an account with what it needs; reloaded when it changes (empty: no ACL)")
	aclBypass := fs.Bool("acl-ip-bypass", false,
		"compatibility only: the ACL file's whitelisted addresses need no signature, as in RocketMQ ACL 1.0 (off: address rules only restrict a valid signature)")
	accessKey := fs.String("access-key", "", "AccessKey the broker signs REGISTER_BROKER with, for name servers with an ACL")
	secretKey := fs.String("secret-key", "", "SecretKey of --access-key (prefer WHEELMQ_SECRET_KEY: other users can read a command line)")
	replication := fs.String("replication", def.Replication.String(),
		"replication: none (a standalone broker) or controller (a raft controller elects the master; sends are confirmed by the sync-state set)")
	haListen := fs.String("ha-listen", "", "replication port host:port, where a master serves its replicas (--replication controller)")
	haAdvertise := fs.String("ha-advertise", "", "replication address published to the controller (default: --ha-listen)")
	haSecretFile := fs.String("ha-secret-file", "",
		"file holding the broker group's replication secret (the same on every broker of the group, >= 16 bytes, e.g. openssl rand -hex 32 > file; chmod 600): "+
			"master and replicas prove it to each other on every HA connection (default: derived from --secret-key)")
	haInsecure := fs.Bool("ha-insecure", false,
		"let --replication controller run with no replication secret on a non-loopback --ha-listen (anyone reaching the HA port can read the CommitLog)")
	grpcListen := fs.String("grpc-listen", defaultGRPCListen,
		"gRPC endpoint for the RocketMQ 5 SDKs (apache.rocketmq.v2.MessagingService, TLS and plaintext on one port; empty: off). "+
			"Not given: --listen's host with port 8081, and when that port is taken a port the kernel picks (logged; clients find it through any other broker's routes)")
	grpcAdvertise := fs.String("grpc-advertise", "", "gRPC endpoint host:port routes name and the name servers publish (default: --advertise's host with the bound gRPC port)")
	grpcSkew := fs.Duration("grpc-signature-skew", grpcgw.DefaultSignatureSkew,
		"with an ACL, how far a gRPC call's signed x-mq-date-time may be from the server's clock (UTC), either way: a captured signature is good for at most that long")
	grpcOffsets := fs.String("grpc-signature-offsets", "",
		"comma-separated clock offsets (e.g. 8h,-5h) gRPC signatures may carry besides UTC: the RocketMQ 5 SDKs stamp their local time (empty: UTC only)")
	minInSync := fs.Int("min-in-sync-replicas", def.MinInSyncReplicas,
		"sends are refused (SYSTEM_ERROR \"in-sync replicas not enough\") while the sync-state set, master included, has fewer members")
	level := fs.String("log-level", "info", "log level: debug, info, warn, error")
	format := fs.String("log-format", "auto", "log format: auto (console on a terminal, else JSON), console, json")
	tlsOpts := defineTLSFlags(fs)                        // TLS on every port: flags_tls.go
	mode, set, err := parseCommandLine(fs, args, stderr) // command.go
	if isHelp(err) {
		return options{}, errHelp
	}
	if err != nil {
		return options{}, fmt.Errorf("invalid configuration:\n  - %w", err)
	}
	if v, ok := env("WHEELMQ_CONFIG"); ok && !set["config"] {
		*configPath = v
	}
	var o options
	var advertiseHost *brokerconf.Setting
	fromFile := map[string]bool{}
	if *configPath != "" {
		var names []string
		fs.VisitAll(func(f *flag.Flag) {
			if f.Name != "config" {
				names = append(names, f.Name)
			}
		})
		file, err := brokerconf.Load(*configPath, names)
		if err != nil {
			problems = append(problems, err.Error())
		} else {
			o.config = file
			problems = append(problems, file.Problems...)
			for _, st := range file.Settings {
				switch {
				case set[st.Flag]: // the command line wins
				case st.HostOnly:
					advertiseHost = &st
				default:
					fromFile[st.Flag] = true
					if err := fs.Lookup(st.Flag).Value.Set(st.Value); err != nil {
						problems = append(problems, file.Problem(st, err))
					}
				}
			}
		}
	}
	fromEnv := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) {
		key := "WHEELMQ_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := env(key); ok && !set[f.Name] && f.Name != "config" {
			fromEnv[f.Name] = true
			if err := f.Value.Set(v); err != nil {
				problems = append(problems, fmt.Sprintf("%s=%q: %v", key, v, err))
			}
		}
	})
	if advertiseHost != nil && !set["advertise"] && !fromEnv["advertise"] {
		// brokerIP1 takes the port of the listen address in force.
		if _, port, err := net.SplitHostPort(*listen); err == nil {
			*advertise = net.JoinHostPort(advertiseHost.Value, port)
		}
	}
	problems = append(problems, inapplicable(mode, set)...)
	if mode == "namesrv" && set["listen"] {
		// The name server's own address: the flag users reach for first.
		*nsListen = *listen
	}
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
	rm, err := pipeline.ParseReplicationMode(*replication)
	if err != nil {
		problems = append(problems, err.Error())
	}
	if rm == pipeline.ReplicationNone && (set["ha-listen"] || set["ha-advertise"] || set["min-in-sync-replicas"] ||
		*haSecretFile != "" || *haInsecure) {
		problems = append(problems, "--ha-listen, --ha-advertise, --ha-secret-file, --ha-insecure and --min-in-sync-replicas need --replication controller")
	}
	bc := def
	bc.Replication, bc.HAListen, bc.HAAdvertise, bc.MinInSyncReplicas = rm, *haListen, *haAdvertise, *minInSync
	bc.DataDir, bc.Listen, bc.Advertise = *data, *listen, *advertise
	bc.BrokerName, bc.Cluster, bc.Flush, bc.AutoCreateTopic = *name, *cluster, fm, *autoCreate
	bc.MaxMessageSize, bc.Index, bc.OnCorruption, bc.AutoCreateGroup = *maxMsg, *indexOn, onCorruption, *autoGroup
	bc.TransactionTimeout, bc.TransactionCheckInterval, bc.TransactionCheckMax = *txTimeout, *txInterval, *txMax
	bc.TopicMessageTypeCheck, bc.MixedMessageType = *typeCheck, *mixedType
	if *deqWorkers < 1 || *deqWorkers > timer.MaxDequeueWorkers {
		problems = append(problems, fmt.Sprintf("timer dequeue workers %d must be in 1..%d", *deqWorkers, timer.MaxDequeueWorkers))
	} else {
		bc.TimerDequeueWorkers = *deqWorkers
	}
	bc.ScheduleMinInterval = *schedMin
	bc.PullWorkers, bc.MaxInflightPerConn, bc.MaxParkedPullsPerConn = *pullWorkers, *maxReqs, *maxParked
	bc.MaxConnOutput, bc.SlowConnTimeout, bc.RouteWait = *maxOutput, *slowTimeout, *routeWait
	bc.IdleConnTimeout = *idleTimeout
	if *liteExpiration < 0 || *maxLiteSubs < 1 {
		problems = append(problems, fmt.Sprintf("lite expiration %v must be >= 0 and lite subscriptions %d >= 1", *liteExpiration, *maxLiteSubs))
	} else {
		bc.LiteExpiration, bc.MaxLiteSubscriptions = *liteExpiration, *maxLiteSubs
	}
	if *liteResident < 0 || *liteIdle < 0 {
		problems = append(problems, fmt.Sprintf("lite resident max %d and lite idle evict %v must be >= 0", *liteResident, *liteIdle))
	} else {
		bc.LiteResidentMax, bc.LiteIdleEvict = *liteResident, *liteIdle
	}
	if *queues < 1 || *queues > 1024 {
		problems = append(problems, fmt.Sprintf("default topic queues %d must be in 1..1024", *queues))
	} else {
		bc.DefaultQueueNums = int32(*queues)
	}
	bc.Retention, bc.RetentionAt, bc.RetentionInterval = *ret, *retAt, *retEvery
	bc.DiskCleanRatio, bc.DiskFullRatio, bc.SegmentSize = *cleanRatio, *fullRatio, *segSize
	if bc.DiskForceCleanRatio > bc.DiskFullRatio {
		bc.DiskForceCleanRatio = bc.DiskFullRatio
	}
	if bc.DiskForceCleanRatio < bc.DiskCleanRatio {
		bc.DiskForceCleanRatio = bc.DiskCleanRatio
	}
	if bc.MaxFrame < bc.MaxMessageSize+256<<10 {
		bc.MaxFrame = bc.MaxMessageSize + 256<<10
	}
	for _, a := range strings.Split(*nsAddrs, ";") {
		if a = strings.TrimSpace(a); a != "" {
			bc.NameServers = append(bc.NameServers, a)
		}
	}
	if (*accessKey == "") != (*secretKey == "") {
		problems = append(problems, "--access-key and --secret-key go together (or WHEELMQ_ACCESS_KEY and WHEELMQ_SECRET_KEY)")
	}
	bc.RegisterCredentials = access.Credentials{AccessKey: *accessKey, SecretKey: *secretKey}
	if *aclBypass && *aclFile == "" {
		problems = append(problems, "--acl-ip-bypass needs --acl-file")
	}
	o.node = process.Config{Broker: bc, RunBroker: mode != "namesrv", MetricsListen: *metrics,
		Pprof: *pprofOn, Console: *consoleOn, ConsoleHosts: splitList(*consoleHosts), ConsoleInsecure: *consoleInsecure,
		ACL: process.ACLConfig{File: *aclFile, IPBypass: *aclBypass}, HASecretFile: *haSecretFile, HAInsecure: *haInsecure}
	if o.node.RunBroker {
		o.node.GRPC = process.GRPCConfig{Listen: *grpcListen, Advertise: *grpcAdvertise, SignatureSkew: *grpcSkew}
		if !set["grpc-listen"] && !fromEnv["grpc-listen"] && !fromFile["grpc-listen"] {
			o.node.GRPC.Listen, o.node.GRPC.ListenIsDefault = grpcListenFor(*listen), true
		}
		if *grpcAdvertise != "" {
			if _, _, err := net.SplitHostPort(*grpcAdvertise); err != nil {
				problems = append(problems, fmt.Sprintf("--grpc-advertise %q: %v", *grpcAdvertise, err))
			}
		}
		offs, err := grpcgw.ParseOffsets(*grpcOffsets)
		if err != nil {
			problems = append(problems, "--grpc-signature-offsets: "+err.Error())
		}
		o.node.GRPC.SignatureOffsets = offs
		if *grpcSkew <= 0 || *grpcSkew > 24*time.Hour {
			problems = append(problems, fmt.Sprintf("--grpc-signature-skew %s must be in (0, 24h]", *grpcSkew))
		}
	}
	if mode != "broker" {
		o.node.NamesrvListen = *nsListen
		o.node.NamesrvDir = filepath.Join(*data, "namesrv")
		o.node.OrderMessageEnable = *orderMsg
		if *ctlListen != "" {
			o.node.Controller = controller.Config{Listen: *ctlListen, Peers: controller.ParsePeers(*ctlPeers),
				Dir: filepath.Join(*data, "controller"), Security: controller.RaftSecurity{Insecure: *ctlInsecure}}
			o.node.ControllerSecretFile = *ctlSecret
		} else {
			for _, f := range []struct {
				name string
				set  bool
			}{{"controller-peers", *ctlPeers != ""}, {"controller-secret-file", *ctlSecret != ""}, {"controller-insecure", *ctlInsecure}} {
				if f.set {
					problems = append(problems, "--"+f.name+" needs --controller-listen")
				}
			}
		}
	}
	if p := dataDirProblem(*data); p != "" {
		problems = append(problems, p)
	}
	problems = append(problems, tlsOpts.apply(&o.node, *data)...) // TLS: flags_tls.go
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

// defaultGRPCListen is --grpc-listen's default as help shows it (the
// host is --listen's: grpcListenFor).
const defaultGRPCListen = "0.0.0.0:8081"

// grpcListenFor is the gRPC endpoint's default address: listen's host
// (the broker's remoting port) with RocketMQ's gRPC port 8081.
func grpcListenFor(listen string) string {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return defaultGRPCListen
	}
	return net.JoinHostPort(host, "8081")
}

// modeFlags lists, per mode, the flags that mean something in it.
var modeFlags = map[string][]string{
	"namesrv": {"data", "listen", "namesrv-listen", "idle-conn-timeout", "controller-listen", "controller-peers", "controller-secret-file", "controller-insecure", "order-message-enable", "metrics-listen", "pprof", "log-level", "log-format",
		"config", "acl-file", "acl-ip-bypass"},
	"broker": {"data", "listen", "namesrv", "route-wait", "metrics-listen", "console", "console-hosts", "console-insecure", "pprof", "advertise", "broker-name", "cluster", "flush",
		"auto-create-topic", "auto-create-group", "max-message-size", "index", "on-corruption", "default-topic-queues",
		"transaction-timeout", "transaction-check-interval", "transaction-check-max", "timer-dequeue-workers", "timer-schedule-min-interval", "retention", "retention-at",
		"pull-workers", "max-conn-requests", "max-conn-parked-pulls", "max-conn-output", "slow-conn-timeout", "idle-conn-timeout",
		"retention-interval", "disk-clean-ratio", "disk-full-ratio", "commitlog-segment-size", "log-level", "log-format",
		"config", "acl-file", "acl-ip-bypass", "access-key", "secret-key",
		"replication", "ha-listen", "ha-advertise", "ha-secret-file", "ha-insecure", "min-in-sync-replicas", "grpc-listen", "grpc-advertise",
		"grpc-signature-skew", "grpc-signature-offsets", "lite-expiration", "max-lite-subscriptions",
		"lite-resident-max", "lite-idle-evict"},
}

// inapplicable reports the command-line flags that mean nothing in mode
// (the environment may carry settings for other modes, so WHEELMQ_*
// variables are not checked).
func inapplicable(mode string, set map[string]bool) []string {
	allowed, ok := modeFlags[mode]
	if !ok {
		return nil
	}
	allowed = append(slices.Clone(allowed), tlsFlagNames...) // every mode's ports take TLS
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

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, it := range strings.Split(s, ",") {
		if it = strings.TrimSpace(it); it != "" {
			out = append(out, it)
		}
	}
	return out
}

// dataDirProblem says plainly when --data names something that is not a
// directory (else the first thing to fail would be the TLS certificate
// made inside it, and the error would read like a TLS problem).
func dataDirProblem(dir string) string {
	st, err := os.Stat(dir)
	switch {
	case err == nil && !st.IsDir():
		return fmt.Sprintf("--data %s is a file, not a directory: give the directory the broker keeps its store in (created when missing)", dir)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("--data %s: %v", dir, err)
	}
	return ""
}
