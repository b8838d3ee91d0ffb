package namesrv

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/stage"
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

// Request asks the registry actor to serve one call. Send it as a pointer
// or a value. The actor calls Reply with the answer, on the actor's
// goroutine, unless Reply is nil (a oneway request); Reply must not block
// (e.g. a gnet AsyncWrite).
type Request struct {
	// Call is the typed request.
	Call Call
	// Reply receives the answer.
	Reply func(Answer)
	// Conn identifies the connection the request came over (0: unknown);
	// a RegisterBroker binds the broker to it (see ConnClosed).
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

// Fail implements stage.Failable: the request is answered Failed.
func (r *Request) Fail(err error) {
	if r.Reply != nil {
		r.Reply(Answer{Status: Failed, Remark: err.Error()})
	}
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
	reply := func(ans Answer) {
		if req.Reply != nil {
			req.Reply(ans)
		}
	}
	if req.Call == nil {
		a.opts.Logger.Warn().Msg("namesrv: request without call")
		reply(a.reg.Serve(nil, a.opts.Now(), req.Conn))
		return
	}
	if _, ok := req.Call.(GetConfig); ok {
		var settings map[string]string
		if a.opts.Settings != nil {
			settings = a.opts.Settings()
		}
		reply(Answer{Settings: settings})
		return
	}
	var key BrokerKey
	var known bool
	switch c := req.Call.(type) {
	case RegisterBroker:
		key = BrokerKey{Cluster: c.Info.Cluster, BrokerName: c.Info.BrokerName, BrokerID: c.Info.BrokerID}
		known = a.reg.Contains(key)
	case UnregisterBroker:
		key = c.Key
		known = a.reg.Contains(key)
	}
	kvBefore := a.reg.KVConfig()
	ans := a.reg.Serve(req.Call, a.opts.Now(), req.Conn)
	a.logResult(req.Call, ans, key, known, a.reg.KVConfig() != kvBefore)
	reply(ans)
}

// logResult logs what a call changed; kvChanged reports a new KV
// configuration.
func (a *registryActor) logResult(call Call, ans Answer, key BrokerKey, known, kvChanged bool) {
	log := &a.opts.Logger
	switch ans.Status {
	case OK, TopicNotFound, NotFound:
	case Unsupported:
		log.Debug().Int32("code", call.Code()).Msg("namesrv: request code not supported")
		return
	default:
		ev := log.Warn().Int32("code", call.Code()).Stringer("status", ans.Status).Str("remark", ans.Remark)
		if addr := brokerAddrOf(call); addr != "" {
			ev = ev.Str("brokerAddr", addr)
		}
		ev.Msg("namesrv: request refused")
		return
	}
	switch c := call.(type) {
	case RegisterBroker:
		ev := log.Debug()
		msg := "namesrv: broker registration renewed"
		if !known {
			ev, msg = log.Info(), "namesrv: broker registered"
		}
		ev.Str("cluster", key.Cluster).Str("brokerName", key.BrokerName).Int64("brokerId", key.BrokerID).
			Str("brokerAddr", c.Info.BrokerAddr).Int("brokers", a.reg.Len()).Msg(msg)
	case UnregisterBroker:
		if known && !a.reg.Contains(key) {
			log.Info().Str("cluster", key.Cluster).Str("brokerName", key.BrokerName).
				Int64("brokerId", key.BrokerID).Int("brokers", a.reg.Len()).Msg("namesrv: broker unregistered")
		}
	case DeleteTopic:
		log.Info().Str("topic", c.Topic).Str("cluster", c.Cluster).Msg("namesrv: topic deleted")
	case PutKV:
		a.logKV(kvChanged, c.Namespace, c.Key).Str("value", c.Value).
			Int("items", a.reg.KVConfig().Len()).Msg(kvMsg(kvChanged, "namesrv: kv config item put"))
	case DeleteKV:
		a.logKV(kvChanged, c.Namespace, c.Key).
			Int("items", a.reg.KVConfig().Len()).Msg(kvMsg(kvChanged, "namesrv: kv config item deleted"))
	}
}

// logKV starts the log event of a KV change (Info) or no-change (Debug).
func (a *registryActor) logKV(changed bool, namespace, key string) *zerolog.Event {
	ev := a.opts.Logger.Debug()
	if changed {
		ev = a.opts.Logger.Info()
	}
	return ev.Str("namespace", namespace).Str("key", key)
}

// kvMsg is a KV change's log message: msg, or that nothing changed.
func kvMsg(changed bool, msg string) string {
	if changed {
		return msg
	}
	return "namesrv: kv config unchanged"
}

// brokerAddrOf returns the broker address a call names ("": none).
func brokerAddrOf(call Call) string {
	switch c := call.(type) {
	case RegisterBroker:
		return c.Info.BrokerAddr
	case UnregisterBroker:
		return c.Addr
	}
	return ""
}
