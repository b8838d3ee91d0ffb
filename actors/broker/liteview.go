package broker

// A typed snapshot of the lite state for the console (docs/lite.md,
// "Console"): per LITE parent the lite topics in memory, what they hold,
// the subscriptions per group and the lite topics holding the most
// messages. Read under the lite state's lock, so the walk over a parent's
// lite topics is bounded (a budget); the view says when it was cut.

import (
	"cmp"
	"maps"
	"slices"
	"time"
)

// DefaultLiteViewBudget bounds the lite topics one LiteView walks when
// the caller does not.
const DefaultLiteViewBudget = 200_000

// LiteParentView is one LITE parent's lite state.
type LiteParentView struct {
	// Topic is the LITE parent.
	Topic string
	// Resident counts its lite topics in memory (holding messages, or
	// subscribed to); Holding those holding messages, Subscribed those
	// with at least one subscriber; Messages the messages held, InFlight
	// the deliveries in flight (of the lite topics walked).
	Resident, Holding, Subscribed, Messages, InFlight int
	// Groups are the consumer groups reading it, by name.
	Groups []LiteGroupView
	// Top are the lite topics holding the most messages, most first.
	Top []LiteTopicView
	// Scanned counts the lite topics walked; Complete is false when the
	// budget cut the walk (the counts are then of those walked, but
	// Resident).
	Scanned  int
	Complete bool
}

// LiteGroupView is one consumer group of a LITE parent.
type LiteGroupView struct {
	Group string
	// Clients counts the group's clients bound to the parent, and
	// Subscriptions their lite subscriptions.
	Clients, Subscriptions int
	// Backlog counts the messages the group has not consumed, InFlight
	// its deliveries in flight (of the lite topics walked).
	Backlog  int64
	InFlight int
}

// LiteTopicView is one lite topic.
type LiteTopicView struct {
	Lite string
	// Messages counts the messages it holds (not consumed by every group
	// reading it); InFlight the groups with one in flight; Subscribers
	// the clients subscribed to it.
	Messages, InFlight, Subscribers int
	// LastWrite is when its newest message was stored.
	LastWrite time.Time
}

// LiteView is the lite state of the LITE topics c may read (SUB on the
// topic), by name: at most top lite topics each in Top, walking at most
// budget lite topics in all (0: DefaultLiteViewBudget).
func (b *Broker) LiteView(c Caller, top, budget int) []LiteParentView {
	if budget <= 0 {
		budget = DefaultLiteViewBudget
	}
	var names []string
	for name, cfg := range b.p.Topics().Load().Topics {
		if LiteTopic(cfg) && b.authorize(c, Need{Kind: KindTopic, Name: name, Perm: Sub}) == nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	s := &b.lite
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now().UnixMilli()
	groups := map[string]map[string]*LiteGroupView{} // parent -> group
	groupOf := func(parent, group string) *LiteGroupView {
		m := groups[parent]
		if m == nil {
			m = map[string]*LiteGroupView{}
			groups[parent] = m
		}
		g := m[group]
		if g == nil {
			g = &LiteGroupView{Group: group}
			m[group] = g
		}
		return g
	}
	for k, cl := range s.clients {
		g := groupOf(cl.parent, k.group)
		g.Clients++
		g.Subscriptions += len(cl.topics)
	}
	out := make([]LiteParentView, 0, len(names))
	for _, name := range names {
		v := LiteParentView{Topic: name, Complete: true}
		if p := s.parents[name]; p != nil {
			v.Resident = p.count
			for q := p.head; q != nil; q = q.next {
				if budget == 0 {
					v.Complete = false
					break
				}
				budget--
				v.Scanned++
				t := LiteTopicView{Lite: q.key.lite, Messages: len(q.msgs), Subscribers: len(s.subs[q.key]),
					LastWrite: time.UnixMilli(q.lastWrite)}
				for i := range q.groups {
					lg := &q.groups[i]
					g := groupOf(name, lg.name)
					g.Backlog += q.end() - max(lg.acked, q.base)
					if lg.flight.token != 0 && lg.flight.deadline > now {
						t.InFlight++
						g.InFlight++
					}
				}
				if t.Messages > 0 {
					v.Holding++
				}
				if t.Subscribers > 0 {
					v.Subscribed++
				}
				v.Messages += t.Messages
				v.InFlight += t.InFlight
				if t.Messages > 0 && top > 0 {
					v.Top = pushTop(v.Top, t, top)
				}
			}
		}
		for _, g := range slices.Sorted(maps.Keys(groups[name])) {
			v.Groups = append(v.Groups, *groups[name][g])
		}
		out = append(out, v)
	}
	return out
}

// pushTop adds t to the n lite topics holding the most messages, kept
// sorted most first (ties by name).
func pushTop(top []LiteTopicView, t LiteTopicView, n int) []LiteTopicView {
	less := func(a, b LiteTopicView) int {
		if c := cmp.Compare(b.Messages, a.Messages); c != 0 {
			return c
		}
		return cmp.Compare(a.Lite, b.Lite)
	}
	if len(top) == n && less(t, top[n-1]) >= 0 {
		return top
	}
	i, _ := slices.BinarySearchFunc(top, t, less)
	top = slices.Insert(top, i, t)
	if len(top) > n {
		top = top[:n]
	}
	return top
}
