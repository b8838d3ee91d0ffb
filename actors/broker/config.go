package broker

// The broker's configuration: Config (GET_BROKER_CONFIG, the console's
// Configuration page) and UpdateConfig (UPDATE_BROKER_CONFIG, the same
// page's form). Both are admin calls.
//
// UpdateConfig applies an update whole or not at all: every key must be one
// that can change at run time (configkeys.go, those with set) and every
// value valid, else nothing changes and the refusal names each key refused
// and why: Forbidden when a key is fixed (a path or a credential above all:
// CVE-2023-33246 and CVE-2023-37582 ran code on RocketMQ brokers through
// config updates naming files), BadRequest for an unknown key or a bad
// value. A change takes effect at once (pipeline.Settings says where each
// value is read), bumps the version's counter, is logged with the caller,
// and lasts until the broker stops (the configuration file stays the
// operator's).

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// maxConfigProblems bounds the refused keys a remark (and its log line)
// names one by one.
const maxConfigProblems = 16

// ConfigKey is one key of the configuration in force.
type ConfigKey struct {
	Key, Value string
	// Changeable says UpdateConfig takes the key (it changes at run time).
	Changeable bool
}

// BrokerConfig is the configuration in force: never a credential-like key.
type BrokerConfig struct {
	// Version counts the run-time changes (RocketMQ's DataVersion).
	Version meta.DataVersion
	// Keys are sorted by key.
	Keys []ConfigKey
}

// Values is the configuration by key.
func (c *BrokerConfig) Values() map[string]string {
	m := make(map[string]string, len(c.Keys))
	for _, k := range c.Keys {
		m[k.Key] = k.Value
	}
	return m
}

// Config answers the configuration in force (admin).
func (b *Broker) Config(c Caller, done func(*BrokerConfig, *Error)) {
	if err := b.authorize(c, Need{Kind: KindBroker, Perm: Admin}); err != nil {
		done(nil, err)
		return
	}
	done(b.config(b.p.Settings()), nil)
}

// config is the configuration with the settings live in force.
func (b *Broker) config(live *pipeline.Settings) *BrokerConfig {
	v := &configView{cfg: b.cfg, live: live, advertise: b.advertise}
	out := &BrokerConfig{Version: live.Version, Keys: make([]ConfigKey, 0, len(brokerKeys))}
	for _, k := range brokerKeys {
		if !secretLike(k.name) {
			out.Keys = append(out.Keys, ConfigKey{Key: k.name, Value: k.show(v), Changeable: k.set != nil})
		}
	}
	slices.SortFunc(out.Keys, func(a, b ConfigKey) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// UpdateConfig changes run-time keys (admin), whole or not at all, and
// answers the configuration then in force. An empty update changes nothing.
func (b *Broker) UpdateConfig(c Caller, values map[string]string, done func(*BrokerConfig, *Error)) {
	if err := b.authorize(c, Need{Kind: KindBroker, Perm: Admin}); err != nil {
		done(nil, err)
		return
	}
	if len(values) == 0 {
		done(b.config(b.p.Settings()), nil)
		return
	}
	keys := slices.Sorted(maps.Keys(values))
	change, st, problems := b.parseUpdate(keys, values)
	if len(problems) > 0 {
		if n := len(problems); n > maxConfigProblems {
			problems = append(problems[:maxConfigProblems], fmt.Sprintf("and %d more", n-maxConfigProblems))
		}
		done(nil, b.refuseUpdate(c, keys, st, strings.Join(problems, "; ")))
		return
	}
	next, err := b.p.UpdateSettings(change)
	if err != nil {
		done(nil, b.refuseUpdate(c, keys, BadRequest, strings.ReplaceAll(err.Error(), "\n", "; ")))
		return
	}
	changed := make([]string, len(keys))
	for i, k := range keys {
		changed[i] = k + "=" + values[k]
	}
	b.log.Info().Stringer("protocol", c.Protocol).Str("account", c.Account).Stringer("remote", c.Remote).
		Strs("set", changed).Int64("version", next.Version.Counter).Msg("broker configuration changed")
	done(b.config(next), nil)
}

// refuseUpdate logs a refused update (the keys, not their values) and
// returns its refusal.
func (b *Broker) refuseUpdate(c Caller, keys []string, st Status, why string) *Error {
	b.log.Warn().Stringer("protocol", c.Protocol).Str("account", c.Account).Stringer("remote", c.Remote).
		Strs("keys", keys[:min(len(keys), maxConfigProblems)]).Int("key_count", len(keys)).
		Stringer("status", st).Str("reason", why).Msg("broker configuration update refused")
	return Errorf(st, "[CONFIG_NOT_CHANGED]nothing changed: %s", why)
}

// parseUpdate checks every key and value of an update. It returns the
// change to apply when all are good, else the refusal's status and one
// problem per refused key.
func (b *Broker) parseUpdate(keys []string, values map[string]string) (func(*pipeline.Settings), Status, []string) {
	v := &configView{cfg: b.cfg, live: b.p.Settings(), advertise: b.advertise}
	var problems []string
	st := BadRequest
	fixed := func(key, why string) {
		problems = append(problems, key+": "+why)
		st = Forbidden
	}
	var applies []apply
	for _, key := range keys {
		k, known := brokerKeyIndex[key]
		switch {
		case secretLike(key):
			fixed(key, "a credential is never read or changed at run time")
		case pathLike(key):
			fixed(key, "names a file or directory: never changeable at run time")
		case !known:
			problems = append(problems, key+": wheelmq has no such setting (GET_BROKER_CONFIG lists its keys)")
		case k.set == nil:
			fixed(key, "fixed while the broker runs: change the broker's configuration and restart it")
		default:
			a, err := k.set(v, values[key])
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s=%q: %v", key, values[key], err))
				continue
			}
			applies = append(applies, a)
		}
	}
	return func(s *pipeline.Settings) {
		for _, a := range applies {
			a(s)
		}
	}, st, problems
}
