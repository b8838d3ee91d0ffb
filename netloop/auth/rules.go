package auth

import (
	"strings"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// Rule is what one request code needs: Needs reads it from the request
// (header fields, and for some codes the body, decoded by the same
// function the handler uses, so that the check and the handler never
// disagree on what the request names; a request whose body does not
// decode needs what its header names and is refused by the handler), and
// Doc says it in words for docs/compatibility.md.
type Rule struct {
	Needs func(cmd *remoting.Command) Needs
	Doc   string
}

// Table maps every request code a port serves to its Rule. A code
// without a rule needs an admin account: nothing is allowed by default.
type Table map[int32]Rule

// DocAdmin is the Doc of admin-only rules.
const DocAdmin = "admin"

// NeedsOf returns what cmd needs by t (an admin account for a code t
// does not know).
func (t Table) NeedsOf(cmd *remoting.Command) Needs {
	if r, ok := t[cmd.Code]; ok && r.Needs != nil {
		return r.Needs(cmd)
	}
	return Needs{Admin: true}
}

// Admin is the rule of admin-only codes.
var Admin = Rule{Needs: func(*remoting.Command) Needs { return Needs{Admin: true} }, Doc: DocAdmin}

// Authenticated is the rule of codes any authenticated account may send.
var Authenticated = Rule{Needs: func(*remoting.Command) Needs { return Needs{} }, Doc: "signature only"}

// The resource prefixes that make a topic name a group's.
const (
	retryPrefix = "%RETRY%"
	dlqPrefix   = "%DLQ%"
)

// TopicNeed is perm on topic, with RocketMQ's rule for a group's own
// topics: a %RETRY% (or %DLQ%) topic is its group's, and needs SUB on the
// group for a send (the consumer's send-back and retries) as for a read.
func TopicNeed(topic string, perm Perm) Need {
	for _, p := range [...]string{retryPrefix, dlqPrefix} {
		if g, ok := strings.CutPrefix(topic, p); ok {
			if perm == PermPub {
				perm = PermSub
			}
			return Need{Kind: KindGroup, Name: g, Perm: perm}
		}
	}
	return Need{Kind: KindTopic, Name: topic, Perm: perm}
}

// GroupNeed is perm on a consumer group (a %RETRY% prefix is dropped).
func GroupNeed(group string, perm Perm) Need {
	return Need{Kind: KindGroup, Name: strings.TrimPrefix(group, retryPrefix), Perm: perm}
}

// FieldRule is a rule that needs perm on the resources named by header
// fields: each field is a topic (kind KindTopic, read with TopicNeed) or a
// group; absent fields need nothing (the handler refuses the request).
func FieldRule(doc string, fields ...FieldNeed) Rule {
	return Rule{Doc: doc, Needs: func(cmd *remoting.Command) Needs {
		var n Needs
		for _, f := range fields {
			v := cmd.Field(f.Field)
			if v == "" {
				continue
			}
			if f.Kind == KindGroup {
				n.Resources = append(n.Resources, GroupNeed(v, f.Perm))
			} else {
				n.Resources = append(n.Resources, TopicNeed(v, f.Perm))
			}
		}
		return n
	}}
}

// FieldNeed names a header field that holds a resource, and the
// permission the request needs on it.
type FieldNeed struct {
	Field string
	Kind  Kind
	Perm  Perm
}

// DeferredRule is the rule of a request that names its message by id or
// offset: perm on the message's topic, checked by the handler.
func DeferredRule(doc string, perm Perm) Rule {
	return Rule{Doc: doc, Needs: func(*remoting.Command) Needs { return Needs{Deferred: perm} }}
}
