package mqclient

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// routeTable caches publish routes by topic.
type routeTable struct {
	sync.RWMutex
	m        map[string]*routeEntry
	inflight map[string]*routeCall // lookups under way, one per topic
}

// routeEntry is one cached route.
type routeEntry struct {
	pub     *PublishRoute
	fetched time.Time // when the lookup that answered it began
}

// storeLocked caches pub, the answer of a lookup that began at began,
// unless the cache holds the answer of a later lookup (two lookups of a
// topic may overlap: a background refresh and a ReloadRoute; the older
// answer must not replace the newer). Lock should be held.
func (t *routeTable) storeLocked(topic string, pub *PublishRoute, began time.Time) {
	if e := t.m[topic]; e != nil && e.fetched.After(began) {
		return
	}
	t.m[topic] = &routeEntry{pub: pub, fetched: began}
}

// routeCall is a lookup under way; waiters block on done.
type routeCall struct {
	done chan struct{}
	pub  *PublishRoute
	err  error
}

// PublishRoute returns the publish route of topic: from the cache, else
// from the name servers (see fetchRoute). A topic the name servers do not
// know gets the route of TBW102, capped at DefaultTopicQueueNums queues and
// marked Borrowed. A route without writable queues is returned with an
// error wrapping ErrNoWritableQueue (and a refresh is scheduled).
func (i *Instance) PublishRoute(ctx context.Context, topic string) (*PublishRoute, error) {
	for {
		i.routes.RLock()
		e := i.routes.m[topic]
		i.routes.RUnlock()
		if e != nil {
			return i.usable(e.pub)
		}
		i.routes.Lock()
		if e := i.routes.m[topic]; e != nil {
			i.routes.Unlock()
			return i.usable(e.pub)
		}
		if call := i.routes.inflight[topic]; call != nil {
			i.routes.Unlock()
			select {
			case <-call.done:
			case <-ctx.Done():
				return nil, fmt.Errorf("route of topic %s: waiting for a lookup: %w", topic, ctx.Err())
			}
			if call.err != nil && isContextErr(call.err) && ctx.Err() == nil {
				continue // the leader's context ended, not ours: look up ourselves
			}
			if call.err != nil {
				return nil, call.err
			}
			return i.usable(call.pub)
		}
		call := i.lookUpLocked(ctx, topic)
		if call.err != nil {
			return nil, call.err
		}
		return i.usable(call.pub)
	}
}

// usable returns pub, or an error when it has no writable queue.
func (i *Instance) usable(pub *PublishRoute) (*PublishRoute, error) {
	if len(pub.Queues) == 0 {
		i.RefreshSoon(pub.Topic)
		return pub, fmt.Errorf("topic %s (%s): %w on a master broker", pub.Topic, pub.Data.describe(), ErrNoWritableQueue)
	}
	return pub, nil
}

// CachedRoute returns the cached publish route of topic, if any.
func (i *Instance) CachedRoute(topic string) (*PublishRoute, bool) {
	i.routes.RLock()
	defer i.routes.RUnlock()
	if e := i.routes.m[topic]; e != nil {
		return e.pub, true
	}
	return nil, false
}

// loadPublish looks topic up, borrowing TBW102's route when it does not
// exist.
func (i *Instance) loadPublish(ctx context.Context, topic string) (*PublishRoute, error) {
	data, err := i.fetchRoute(ctx, topic)
	if err == nil {
		return data.Publish(topic), nil
	}
	if !errors.Is(err, ErrTopicNotExist) {
		return nil, err
	}
	def, derr := i.fetchRoute(ctx, AutoCreateTopic)
	if derr != nil {
		return nil, fmt.Errorf("%w; and no route to create it from: %w", err, derr)
	}
	pub := def.capQueues(i.cfg.DefaultTopicQueueNums).Publish(topic)
	pub.Borrowed = true
	return pub, nil
}

// fetchRoute asks the name servers for topic's route: in turn, starting
// with the last one that answered, each within NameServerTimeout (and ctx).
// A name server that cannot be reached, fails, or sends a body that does not
// parse is skipped; TOPIC_NOT_EXIST (17) is an answer.
func (i *Instance) fetchRoute(ctx context.Context, topic string) (*TopicRouteData, error) {
	ns := i.cfg.NameServers
	start := int(i.nsNext.Load())
	var errs []error
	for k := range ns {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		idx := (start + k) % len(ns)
		cctx, cancel := context.WithTimeout(ctx, i.cfg.NameServerTimeout)
		data, answered, err := i.askRoute(cctx, ns[idx], topic)
		cancel()
		if answered {
			i.nsNext.Store(int32(idx))
			return data, err
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("route of topic %s: %w (tried %d, each within %v): %w",
		topic, ErrNameServerUnreachable, len(ns), i.cfg.NameServerTimeout, errors.Join(errs...))
}

// askRoute sends GET_ROUTEINFO_BY_TOPIC to one name server.
func (i *Instance) askRoute(ctx context.Context, addr, topic string) (*TopicRouteData, bool, error) {
	c, err := i.Conn(ctx, addr)
	if err != nil {
		return nil, false, fmt.Errorf("name server %s: %w", addr, err)
	}
	req := i.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{
		"topic": topic, "acceptStandardJsonOnly": "true",
	}, nil)
	resp, err := c.Invoke(ctx, req)
	if err != nil {
		return nil, false, fmt.Errorf("name server %s: %w", addr, err)
	}
	switch resp.Code {
	case remoting.Success:
		data, err := ParseRoute(resp.Body)
		if err != nil {
			return nil, false, fmt.Errorf("name server %s: route of %s: %w", addr, topic, err)
		}
		return data, true, nil
	case remoting.TopicNotExist:
		return nil, true, fmt.Errorf("name server %s: topic %s: %w (%s)", addr, topic, ErrTopicNotExist, resp.Remark)
	}
	return nil, false, fmt.Errorf("name server %s: route of %s: code %d: %s", addr, topic, resp.Code, resp.Remark)
}

// NewRequest builds a request in the instance's header encoding.
func (i *Instance) NewRequest(code int32, ext map[string]string, body []byte) *remoting.Command {
	req := remoting.NewRequest(code, ext, body)
	req.Version = ClientVersion
	req.Serialize = i.cfg.Serialize()
	return req
}

// RefreshSoon asks for topic's route to be looked up again at once (in the
// background, at most every minRefreshGap), as after a failed send.
func (i *Instance) RefreshSoon(topic string) {
	i.dirty.Lock()
	i.dirty.topics[topic] = struct{}{}
	i.dirty.Unlock()
	select {
	case i.refreshKick <- struct{}{}:
	default:
	}
}

// refreshLoop refreshes every cached route each RouteRefreshInterval (then
// drops connections no route needs) and the topics of RefreshSoon at once.
func (i *Instance) refreshLoop() {
	tick := time.NewTicker(i.cfg.RouteRefreshInterval)
	defer tick.Stop()
	for {
		select {
		case <-i.ctx.Done():
			return
		case <-tick.C:
			i.refresh(i.cachedTopics())
			i.dropUnusedConns()
		case <-i.refreshKick:
			i.dirty.Lock()
			topics := make([]string, 0, len(i.dirty.topics))
			for t := range i.dirty.topics {
				topics = append(topics, t)
			}
			clear(i.dirty.topics)
			i.dirty.Unlock()
			i.refresh(topics)
			gap := time.NewTimer(minRefreshGap)
			select {
			case <-i.ctx.Done():
				gap.Stop()
				return
			case <-gap.C:
			}
		}
	}
}

// cachedTopics lists the topics in the route cache.
func (i *Instance) cachedTopics() []string {
	i.routes.RLock()
	defer i.routes.RUnlock()
	out := make([]string, 0, len(i.routes.m))
	for t := range i.routes.m {
		out = append(out, t)
	}
	return out
}

// refresh looks topics up again. A failed lookup keeps the old route; a
// borrowed route is replaced once the topic exists.
func (i *Instance) refresh(topics []string) {
	for _, topic := range topics {
		if i.ctx.Err() != nil {
			return
		}
		began := time.Now()
		pub, err := i.loadPublish(i.ctx, topic)
		if err != nil {
			i.log.Debug().Err(err).Str("topic", topic).Msg("route refresh failed; keeping the cached route")
			continue
		}
		i.routes.Lock()
		i.routes.storeLocked(topic, pub, began)
		i.routes.Unlock()
	}
}

// masterAddrs returns the master addresses of every cached route.
func (i *Instance) masterAddrs() map[string]bool {
	i.routes.RLock()
	defer i.routes.RUnlock()
	out := map[string]bool{}
	for _, e := range i.routes.m {
		for _, a := range e.pub.Data.masterAddrs() {
			out[a] = true
		}
	}
	return out
}

// dropUnusedConns closes idle connections to brokers no cached route names.
func (i *Instance) dropUnusedConns() {
	used := i.masterAddrs()
	dropped := i.conns.dropIdle(func(a string) bool { return used[a] || i.isNameServer(a) })
	if len(dropped) > 0 {
		i.log.Debug().Strs("remote", dropped).Msg("closed connections no route uses")
	}
}

// isContextErr reports an error caused by a context ending.
func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// lookUpLocked leads one lookup of topic's publish route that concurrent
// callers wait for (routes.inflight), caching a successful answer. Called
// with i.routes locked; it returns with it unlocked and the call done.
func (i *Instance) lookUpLocked(ctx context.Context, topic string) *routeCall {
	call := &routeCall{done: make(chan struct{})}
	i.routes.inflight[topic] = call
	i.routes.Unlock()
	began := time.Now()
	call.pub, call.err = i.loadPublish(ctx, topic)
	i.routes.Lock()
	delete(i.routes.inflight, topic)
	if call.err == nil {
		i.routes.storeLocked(topic, call.pub, began)
	}
	i.routes.Unlock()
	close(call.done)
	return call
}

// ReloadRoute looks topic's publish route up again now, on the calling
// goroutine within ctx, instead of waiting for the background refresh: a
// producer calls it after an answer or a failure that says the route is
// stale (a broker that is no longer its group's master, a broken
// connection). Concurrent reloads of a topic share one lookup; the answer
// is cached, a failed lookup keeps the cached route.
func (i *Instance) ReloadRoute(ctx context.Context, topic string) (*PublishRoute, error) {
	i.routes.Lock()
	call := i.routes.inflight[topic]
	if call == nil {
		call = i.lookUpLocked(ctx, topic)
		return call.pub, call.err
	}
	i.routes.Unlock()
	select {
	case <-call.done:
		return call.pub, call.err
	case <-ctx.Done():
		return nil, fmt.Errorf("route of topic %s: waiting for a lookup: %w", topic, ctx.Err())
	}
}
