package namesrv

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/netloop/remoting/javaprops"
	"github.com/wheelmq/wheelmq/storage/vfs"
)

// DefaultScanInterval is how often the actor expires silent brokers
// (RocketMQ's name server scans every 5 s).
const DefaultScanInterval = 5 * time.Second

// Options configure the registry actor. The zero value is usable.
type Options struct {
	// Logger receives registration, unregistration and expiry events;
	// the zero value discards them.
	Logger zerolog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// ScanInterval is the expiry scan period; <= 0 means DefaultScanInterval.
	ScanInterval time.Duration
	// KVConfigPath is the KV configuration file (<dir>/kvConfig.json),
	// loaded on every (re)start of the actor and rewritten atomically on
	// every change before it is answered. "" keeps the KV configuration in
	// memory only: a restart loses it.
	KVConfigPath string
	// FS is the file system of KVConfigPath; nil is the real one.
	FS vfs.FS
	// OrderMessageEnable puts a topic's ORDER_TOPIC_CONFIG value into its
	// routes as orderTopicConf (RocketMQ's orderMessageEnable, default off).
	OrderMessageEnable bool
	// Settings returns what GET_NAMESRV_CONFIG (319) shows, by RocketMQ's
	// NamesrvConfig keys (listenPort, kvConfigPath, ...), never a secret;
	// nil shows nothing. The settings are the process's flags:
	// UPDATE_NAMESRV_CONFIG (318) is refused.
	Settings func() map[string]string
	// MasterEpoch (nil: no controller) returns the master epoch the
	// embedded controller applied for a broker group: a brokerId-0
	// registration carrying an older one (DataVersion.StateVersion) is
	// refused (Registry.SetMasterEpoch).
	MasterEpoch func(cluster, brokerName string) (int64, bool)
}

// Request asks the registry actor to serve one name-server command. Send it
// as a pointer or a value. The actor calls Reply with the response, on the
// actor's goroutine, unless Cmd is a oneway request or Reply is nil; Reply
// must not block (e.g. a gnet AsyncWrite).
type Request struct {
	// Cmd is the decoded request.
	Cmd *remoting.Command
	// Reply receives the response.
	Reply func(*remoting.Command)
	// Conn identifies the connection the request came over (0: unknown);
	// a REGISTER_BROKER binds the broker to it (see ConnClosed).
	Conn uint64
}

// ConnClosed tells the registry actor that a name-server connection
// closed: the brokers whose last registration came over it leave the routes
// at once, without waiting for their heartbeat timeout (as RocketMQ's
// BrokerHousekeepingService). Send it after every request read from that
// connection, e.g. from the server's OnClose.
type ConnClosed struct {
	// Conn is the closed connection's id, as in Request.Conn.
	Conn uint64
}

// Fail implements stage.Failable: the request is answered with SYSTEM_ERROR.
func (r *Request) Fail(err error) {
	r.Reply(remoting.NewResponse(r.Cmd, remoting.SystemError, err.Error()))
}

// expireTick is the actor's scan timer message.
type expireTick struct{}

// registryActor owns one Registry.
type registryActor struct {
	opts  Options
	reg   *Registry
	timer *stage.Timer
}

// Producer returns the registry actor's producer, spawned as a supervised
// stage. The route table lives only in memory: a restart (or a process
// restart) starts from an empty table, which refills as brokers re-register
// every 30 s. The KV configuration is read from Options.KVConfigPath on
// every start; a file that does not load fails the start (the supervisor
// restarts the stage, then stops it).
func Producer(opts Options) stage.Producer {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.ScanInterval <= 0 {
		opts.ScanInterval = DefaultScanInterval
	}
	return func(self *stage.Stage) actor.Actor {
		return &registryActor{opts: opts, reg: NewRegistry(), timer: self.NewTimer()}
	}
}

// Receive implements actor.Actor.
func (a *registryActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.start()
		a.timer.Arm(a.opts.ScanInterval, expireTick{})
	case *actor.Stopping, *actor.Restarting:
		a.timer.Stop()
	case *Request:
		a.serve(m)
	case Request:
		a.serve(&m)
	case ConnClosed:
		a.connClosed(m.Conn)
	case *ConnClosed:
		a.connClosed(m.Conn)
	case *ClusterQuery:
		m.Reply(a.reg.ClusterInfo())
	case *DeleteRoute:
		m.Done(a.reg.DeleteTopic(m.Topic, ""))
	case expireTick:
		a.expire()
		a.timer.Arm(a.opts.ScanInterval, expireTick{})
	}
}

// start loads the KV configuration and sets the route options.
func (a *registryActor) start() {
	a.reg.SetOrderMessageEnable(a.opts.OrderMessageEnable)
	a.reg.SetMasterEpoch(a.opts.MasterEpoch)
	path := a.opts.KVConfigPath
	if path == "" {
		return
	}
	kv, err := LoadKVConfig(a.opts.FS, path)
	if err != nil {
		panic(err)
	}
	a.reg.UseKVConfig(kv, func(next *KVConfig) error {
		if err := SaveKVConfig(a.opts.FS, path, next); err != nil {
			a.opts.Logger.Error().Err(err).Str("path", path).Msg("namesrv: persist kv config failed")
			return err
		}
		return nil
	})
	a.opts.Logger.Debug().Str("path", path).Int("items", kv.Len()).Msg("namesrv: kv config loaded")
}

// expire drops silent brokers and logs each.
func (a *registryActor) expire() {
	for _, k := range a.reg.Expire(a.opts.Now()) {
		a.opts.Logger.Warn().
			Str("cluster", k.Cluster).Str("brokerName", k.BrokerName).Int64("brokerId", k.BrokerID).
			Int("brokers", a.reg.Len()).
			Msg("namesrv: broker expired")
	}
}

// connClosed drops the brokers registered over conn and logs each.
func (a *registryActor) connClosed(conn uint64) {
	for _, k := range a.reg.DropConn(conn) {
		a.opts.Logger.Warn().
			Str("cluster", k.Cluster).Str("brokerName", k.BrokerName).Int64("brokerId", k.BrokerID).
			Uint64("conn", conn).Int("brokers", a.reg.Len()).
			Msg("namesrv: broker connection closed, broker removed")
	}
}

// serve handles one request, logs membership changes and replies.
func (a *registryActor) serve(req *Request) {
	log := &a.opts.Logger
	if req.Cmd == nil {
		log.Warn().Msg("namesrv: request without command")
		if req.Reply != nil {
			req.Reply(a.reg.HandleConn(nil, a.opts.Now(), req.Conn))
		}
		return
	}
	cmd := req.Cmd
	var key BrokerKey
	var known bool
	if cmd.Code == remoting.RegisterBroker || cmd.Code == remoting.UnregisterBroker {
		key, _ = parseBrokerKey(cmd)
		known = a.reg.Contains(key)
	}
	if cmd.Code == remoting.GetNamesrvConfig {
		resp := remoting.NewResponse(cmd, remoting.Success, "")
		var settings map[string]string
		if a.opts.Settings != nil {
			settings = a.opts.Settings()
		}
		resp.Body = javaprops.Encode(settings)
		if req.Reply != nil && !cmd.IsOneway() {
			req.Reply(resp)
		}
		return
	}
	kvBefore := a.reg.KVConfig()
	resp := a.reg.HandleConn(cmd, a.opts.Now(), req.Conn)
	a.logResult(cmd, resp, key, known, a.reg.KVConfig() != kvBefore)
	if req.Reply != nil && !cmd.IsOneway() {
		req.Reply(resp)
	}
}

// logResult logs what a request changed; kvChanged reports a new KV
// configuration.
func (a *registryActor) logResult(cmd, resp *remoting.Command, key BrokerKey, known, kvChanged bool) {
	log := &a.opts.Logger
	if resp.Code == remoting.RequestCodeNotSupported {
		log.Debug().Int32("code", cmd.Code).Msg("namesrv: request code not supported")
		return
	}
	switch resp.Code {
	case remoting.Success, remoting.TopicNotExist, remoting.QueryNotFound:
	default:
		ev := log.Warn().Int32("code", cmd.Code).Int32("respCode", resp.Code).Str("remark", resp.Remark)
		if addr := cmd.Field(fieldBrokerAddr); addr != "" {
			ev = ev.Str("brokerAddr", addr)
		}
		ev.Msg("namesrv: request refused")
		return
	}
	switch cmd.Code {
	case remoting.RegisterBroker:
		ev := log.Debug()
		msg := "namesrv: broker registration renewed"
		if !known {
			ev, msg = log.Info(), "namesrv: broker registered"
		}
		ev.Str("cluster", key.Cluster).Str("brokerName", key.BrokerName).Int64("brokerId", key.BrokerID).
			Str("brokerAddr", cmd.Field(fieldBrokerAddr)).Int("brokers", a.reg.Len()).Msg(msg)
	case remoting.UnregisterBroker:
		if known && !a.reg.Contains(key) {
			log.Info().Str("cluster", key.Cluster).Str("brokerName", key.BrokerName).
				Int64("brokerId", key.BrokerID).Int("brokers", a.reg.Len()).Msg("namesrv: broker unregistered")
		}
	case remoting.DeleteTopicInNamesrv:
		log.Info().Str("topic", cmd.Field(fieldTopic)).Str("cluster", cmd.Field(fieldClusterName)).
			Msg("namesrv: topic deleted")
	case remoting.PutKVConfig, remoting.DeleteKVConfig:
		ev, msg := log.Debug(), "namesrv: kv config unchanged"
		if kvChanged {
			ev, msg = log.Info(), "namesrv: kv config item put"
			if cmd.Code == remoting.DeleteKVConfig {
				msg = "namesrv: kv config item deleted"
			}
		}
		if cmd.Code == remoting.PutKVConfig {
			ev = ev.Str("value", cmd.Field(fieldValue))
		}
		ev.Str("namespace", cmd.Field(fieldNamespace)).Str("key", cmd.Field(fieldKey)).
			Int("items", a.reg.KVConfig().Len()).Msg(msg)
	}
}
