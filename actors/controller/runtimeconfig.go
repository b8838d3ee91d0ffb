package controller

// GET_CONTROLLER_CONFIG (1010) and UPDATE_CONTROLLER_CONFIG (1009): mqadmin
// getControllerConfig / updateControllerConfig.
//
// 1010 answers as RocketMQ 5's ControllerRequestProcessor does: the body is
// the configuration as Java properties text, "key=value" lines sorted by
// key. The keys are RocketMQ's ControllerConfig names where wheelmq has the
// setting (controllerType, controllerDLegerGroup/Peers/SelfId,
// controllerStorePath, scanNotActiveBrokerInterval, enableElectUncleanMaster,
// notifyBrokerRoleChanged, controllerRequestThreadPoolQueueCapacity), the
// broker-side controllerHeartBeatTimeoutMills for the lease every broker
// gets, and wheelmq's raft timings.
//
// 1009 carries properties text. Java applies every key it knows and refuses
// only its configBlackList; wheelmq applies an update whole or not at all,
// as its UPDATE_BROKER_CONFIG does: every key must be on the allow-list of
// settings that can change at run time (runtimeKeys, those with set) and
// every value in range, else nothing changes and the answer names each key
// refused: NO_PERMISSION for a fixed key (a path above all), INVALID_PARAMETER
// for an unknown key or a bad value. A change takes effect at once on this
// controller only (mqadmin sends the update to each controller it names),
// is logged, and lasts until the process stops. Both are admin-only under
// an ACL (netloop/ctlwire.Permissions) and served by every controller, leader or not.

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wheelmq/wheelmq/actors/wirecode"
)

const (
	// maxConfigProblems bounds the refused keys a remark names one by one.
	maxConfigProblems = 16
	// minScanInterval and the lease bounds keep a run-time change sane: the
	// lease must stay above the brokers' FenceAfter (2.5 s, member), so
	// that a master fences itself before another can be elected.
	minScanInterval = 10 * time.Millisecond
	minLease        = DefaultLease
	maxLease        = time.Minute
)

// runtimeKey is one key of GET_CONTROLLER_CONFIG; set is nil for a key
// fixed while the controller runs, else it checks a value and returns the
// change to apply (on the stage).
type runtimeKey struct {
	name string
	show func(c *Controller) string
	set  func(c *Controller, v string) (func(), error)
}

func millis(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

func fixed(v string) func(*Controller) string { return func(*Controller) string { return v } }

// runtimeKeys are the keys 1010 lists and 1009 may name.
var runtimeKeys = []runtimeKey{
	{name: "controllerType", show: fixed("hashicorp-raft")},
	{name: "controllerDLegerGroup", show: fixed(controllerGroup)},
	{name: "controllerDLegerPeers", show: func(c *Controller) string { return strings.Join(c.cfg.peers(), ";") }},
	{name: "controllerDLegerSelfId", show: func(c *Controller) string { return c.cfg.advertise() }},
	{name: "controllerStorePath", show: func(c *Controller) string { return c.cfg.Dir }},
	{name: "controllerRequestThreadPoolQueueCapacity", show: fixed(strconv.Itoa(inboxSize))},
	{name: "enableElectUncleanMaster", show: fixed("false")},
	{name: "notifyBrokerRoleChanged", show: fixed("false")},
	{name: "raftHeartbeatTimeoutMillis", show: func(c *Controller) string {
		return millis(orDur(c.cfg.HeartbeatTimeout, DefaultRaftHeartbeatTimeout))
	}},
	{name: "raftElectionTimeoutMillis", show: func(c *Controller) string {
		return millis(orDur(c.cfg.ElectionTimeout, DefaultRaftElectionTimeout))
	}},
	{name: "raftLeaderLeaseTimeoutMillis", show: func(c *Controller) string {
		return millis(orDur(c.cfg.LeaderLeaseTimeout, DefaultRaftLeaderLease))
	}},
	{name: "scanNotActiveBrokerInterval", show: func(c *Controller) string { return millis(c.cfg.ScanInterval) },
		set: func(c *Controller, v string) (func(), error) {
			d, err := parseMillis(v, minScanInterval, c.cfg.Lease)
			if err != nil {
				return nil, err
			}
			return func() { c.cfg.ScanInterval = d }, nil
		}},
	{name: "controllerHeartBeatTimeoutMills", show: func(c *Controller) string { return millis(c.cfg.Lease) },
		set: func(c *Controller, v string) (func(), error) {
			d, err := parseMillis(v, max(minLease, c.cfg.ScanInterval), maxLease)
			if err != nil {
				return nil, err
			}
			return func() {
				c.cfg.Lease = d
				if c.live != nil {
					c.live.lease = d
				}
			}, nil
		}},
}

// parseMillis reads a whole number of milliseconds within [lo, hi].
func parseMillis(v string, lo, hi time.Duration) (time.Duration, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not a whole number of milliseconds")
	}
	if d := time.Duration(n) * time.Millisecond; n >= lo.Milliseconds() && n <= hi.Milliseconds() {
		return d, nil
	}
	return 0, fmt.Errorf("out of range [%d, %d] ms", lo.Milliseconds(), hi.Milliseconds())
}

// configView is the configuration in force, by key (1010's body).
func (c *Controller) configView() map[string]string {
	m := make(map[string]string, len(runtimeKeys))
	for _, k := range runtimeKeys {
		m[k.name] = k.show(c)
	}
	return m
}

// updateConfig applies an update (1009) on the stage, whole or not at all:
// ok, or the answer's code and the reason naming each refused key.
func (c *Controller) updateConfig(conn uint64, values map[string]string) (code int32, why string) {
	keys := slices.Sorted(maps.Keys(values))
	applies, code, problems := c.checkUpdate(keys, values)
	if len(problems) > 0 {
		if n := len(problems); n > maxConfigProblems {
			problems = append(problems[:maxConfigProblems], fmt.Sprintf("and %d more", n-maxConfigProblems))
		}
		why := strings.Join(problems, "; ")
		c.cfg.Logger.Warn().Uint64("conn", conn).Strs("keys", keys[:min(len(keys), maxConfigProblems)]).
			Int32("code", code).Str("reason", why).Msg("controller: configuration update refused (UPDATE_CONTROLLER_CONFIG)")
		return code, why
	}
	for _, a := range applies {
		a()
	}
	if len(keys) > 0 {
		set := make([]string, len(keys))
		for i, k := range keys {
			set[i] = k + "=" + values[k]
		}
		c.cfg.Logger.Info().Uint64("conn", conn).Strs("set", set).Msg("controller: configuration changed (UPDATE_CONTROLLER_CONFIG)")
	}
	return wirecode.Success, ""
}

// checkUpdate checks every key and value of an update: the changes to
// apply when all are good, else the answer's code and one problem per
// refused key.
func (c *Controller) checkUpdate(keys []string, values map[string]string) ([]func(), int32, []string) {
	var applies []func()
	var problems []string
	code := wirecode.InvalidParameter
	refuseFixed := func(key, why string) {
		problems = append(problems, key+": "+why)
		code = wirecode.NoPermission
	}
	for _, key := range keys {
		i := slices.IndexFunc(runtimeKeys, func(k runtimeKey) bool { return k.name == key })
		switch {
		case pathKey(key):
			refuseFixed(key, "names a file or directory (or is on RocketMQ's configBlackList): never changeable through the remoting protocol")
		case i < 0:
			problems = append(problems, key+": wheelmq's controller has no such setting (GET_CONTROLLER_CONFIG lists its keys)")
		case runtimeKeys[i].set == nil:
			refuseFixed(key, "fixed while the controller runs: change its flags and restart it")
		default:
			a, err := runtimeKeys[i].set(c, values[key])
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s=%q: %v", key, values[key], err))
				continue
			}
			applies = append(applies, a)
		}
	}
	return applies, code, problems
}

// pathKey reports whether a key names a file or directory (or is one of
// Java's configBlackList): never changed remotely.
func pathKey(key string) bool {
	switch key {
	case "configBlackList", "configStorePath", "rocketmqHome":
		return true
	}
	l := strings.ToLower(key)
	return strings.HasSuffix(l, "path") || strings.HasSuffix(l, "dir") || strings.HasSuffix(l, "home") || strings.HasSuffix(l, "file")
}
