package router

// GET_BROKER_CONFIG (26) and UPDATE_BROKER_CONFIG (25): mqadmin
// getBrokerConfig / updateBrokerConfig, rocketmq-dashboard's broker
// configuration page.
//
// 26 answers as AdminBrokerProcessor.getBrokerConfig does: the header field
// version holds the configuration's DataVersion as JSON
// ({"stateVersion":0,"timestamp":ms,"counter":n}), the body the
// configuration as properties text, "key=value" lines sorted by key
// (brokerkeys.go lists them). Java leaves the body out when the text is
// empty (its client then fails on the missing body); wheelmq's never is.
//
// 25 carries properties text (MixAll.properties2String: unsorted
// "key=value" lines). Unlike Java, which applies every key it knows and
// silently skips the rest (refusing only its configBlackList), wheelmq
// applies an update whole or not at all: every key must be one that can
// change at run time (brokerkeys.go, those with set) and every value valid,
// else nothing changes and the answer names each key refused and why:
// NO_PERMISSION when a key is fixed (a path or a credential above all:
// CVE-2023-33246 and CVE-2023-37582 ran code on RocketMQ brokers through
// config updates naming files), INVALID_PARAMETER for an unknown key or a
// bad value. A key given twice counts once, the last value winning, as
// java.util.Properties reads it. An empty body changes nothing (SUCCESS,
// the version unchanged). A change takes effect at once
// (pipeline.Settings says where each value is read), bumps the version's
// counter, is logged with the caller's address, and lasts until the broker
// stops (Java persists it; wheelmq's configuration file stays the
// operator's).
//
// Anyone who reaches the remoting port may send 25 today; it becomes
// admin-only once access control exists (issue 18).

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/netloop/remoting/javaprops"
)

const (
	// maxConfigBody bounds an UPDATE_BROKER_CONFIG body (a few keys).
	maxConfigBody = 64 << 10
	// maxProblems bounds the refused keys a remark (and its log line)
	// names one by one.
	maxProblems = 16
)

func (r *Router) handleGetBrokerConfig(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	live := r.p.Settings()
	version, err := json.Marshal(live.Version)
	if err != nil {
		return refuse(remoting.SystemError, "encode the configuration version: %v", err)
	}
	resp := remoting.NewResponse(cmd, remoting.Success, "")
	resp.SetField("version", string(version))
	resp.Body = javaprops.Encode(r.brokerConfig(live))
	r.send(c, cmd, resp)
	return nil
}

// brokerConfig is the configuration in force, by key (no credential-like
// key ever).
func (r *Router) brokerConfig(live *pipeline.Settings) map[string]string {
	v := &configView{r: r, cfg: r.cfg, live: live, advertise: r.core.Advertise()}
	m := make(map[string]string, len(brokerKeys))
	for _, k := range brokerKeys {
		if !secretLike(k.name) {
			m[k.name] = k.show(v)
		}
	}
	return m
}

func (r *Router) handleUpdateBrokerConfig(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	if len(cmd.Body) > maxConfigBody {
		return refuse(remoting.InvalidParameter, "[CONFIG_NOT_CHANGED]the body holds %d bytes, more than %d", len(cmd.Body), maxConfigBody)
	}
	entries, err := javaprops.Parse(cmd.Body)
	if err != nil {
		return refuse(remoting.InvalidParameter, "[CONFIG_NOT_CHANGED]the body is not Java properties text: %v", err)
	}
	values := make(map[string]string, len(entries))
	for _, e := range entries {
		values[e.Key] = strings.TrimSpace(e.Value) // as properties2Object and mqadmin trim
	}
	if len(values) == 0 {
		r.reply(c, cmd, remoting.Success, "")
		return nil
	}
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	change, code, problems := r.parseUpdate(keys, values)
	if len(problems) > 0 {
		if n := len(problems); n > maxProblems {
			problems = append(problems[:maxProblems], fmt.Sprintf("and %d more", n-maxProblems))
		}
		return r.refuseUpdate(c, keys, code, strings.Join(problems, "; "))
	}
	next, err := r.p.UpdateSettings(change)
	if err != nil {
		return r.refuseUpdate(c, keys, remoting.InvalidParameter, strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	changed := make([]string, len(keys))
	for i, k := range keys {
		changed[i] = k + "=" + values[k]
	}
	r.log.Info().Str("remote", c.RemoteAddr()).Strs("set", changed).Int64("version", next.Version.Counter).
		Msg("broker configuration changed (UPDATE_BROKER_CONFIG)")
	r.reply(c, cmd, remoting.Success, "")
	return nil
}

// refuseUpdate logs a refused update (the keys, not their values) and
// returns its refusal.
func (r *Router) refuseUpdate(c *netloop.Conn, keys []string, code int32, why string) *Refusal {
	r.log.Warn().Str("remote", c.RemoteAddr()).Strs("keys", keys[:min(len(keys), maxProblems)]).Int("key_count", len(keys)).
		Int32("code", code).Str("reason", why).
		Msg("broker configuration update refused (UPDATE_BROKER_CONFIG)")
	return refuse(code, "[CONFIG_NOT_CHANGED]nothing changed: %s", why)
}

// parseUpdate checks every key and value of an update. It returns the
// change to apply when all are good, else the answer's code and one
// problem per refused key.
func (r *Router) parseUpdate(keys []string, values map[string]string) (func(*pipeline.Settings), int32, []string) {
	v := &configView{r: r, cfg: r.cfg, live: r.p.Settings(), advertise: r.core.Advertise()}
	var problems []string
	code := remoting.InvalidParameter
	fixed := func(key, why string) {
		problems = append(problems, key+": "+why)
		code = remoting.NoPermission
	}
	var applies []apply
	for _, key := range keys {
		k, known := brokerKeyIndex[key]
		switch {
		case secretLike(key):
			fixed(key, "a credential is never read or changed through the remoting protocol")
		case pathLike(key):
			fixed(key, "names a file or directory: never changeable through the remoting protocol")
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
	}, code, problems
}
