package adminbody

// The bodies of RocketMQ 5.3's ACL 2.0 admin requests (AUTH_* 3001-3010):
// UserInfo (remoting/protocol/body/UserInfo.java) and AclInfo with its
// PolicyInfo and PolicyEntryInfo (AclInfo.java), as fastjson writes them:
// properties in alphabetical order, nulls omitted.
//
//	UserInfo {"password":"12345678","userStatus":"enable","userType":"Normal","username":"alice"}
//	AclInfo  {"policies":[{"entries":[{"actions":["Pub","Sub"],"decision":"Allow",
//	          "resource":"Topic:orders","sourceIps":["10.0.0.0/8"]}],"policyType":"Custom"}],
//	          "subject":"User:alice"}
//
// The list answers (3005, 3010) are JSON arrays of these. The decoders read
// as leniently as fastjson: a number or boolean where a string belongs is
// taken as its literal text, null is absent, unknown properties are
// ignored, property names match without regard to case.

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// UserInfo is an ACL 2.0 user. wheelmq never puts a password in an answer.
type UserInfo struct {
	Password   string `json:"password,omitempty"`
	UserStatus string `json:"userStatus,omitempty"`
	UserType   string `json:"userType,omitempty"`
	Username   string `json:"username,omitempty"`
}

// AclInfo is the policies of one subject ("User:alice").
type AclInfo struct {
	Policies []PolicyInfo `json:"policies,omitempty"`
	Subject  string       `json:"subject,omitempty"`
}

// PolicyInfo is one policy (policyType Custom or Default) of an AclInfo.
type PolicyInfo struct {
	Entries    []PolicyEntryInfo `json:"entries,omitempty"`
	PolicyType string            `json:"policyType,omitempty"`
}

// PolicyEntryInfo is one rule: a resource ("Topic:orders", "Group:g*",
// "*"), the actions, the source addresses it applies from (empty: any) and
// the decision (Allow or Deny).
type PolicyEntryInfo struct {
	Actions   []string `json:"actions,omitempty"`
	Decision  string   `json:"decision,omitempty"`
	Resource  string   `json:"resource,omitempty"`
	SourceIps []string `json:"sourceIps,omitempty"`
}

// text is a string property read as fastjson reads one: a JSON string, or
// the literal text of a number or boolean; null is "".
type text string

// UnmarshalJSON implements json.Unmarshaler.
func (t *text) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0:
		return fmt.Errorf("adminbody: empty value")
	case b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*t = text(s)
	case string(b) == "null":
		*t = ""
	case b[0] == '{' || b[0] == '[':
		return fmt.Errorf("adminbody: an object or array where a string belongs")
	default: // a number or true/false: json.Unmarshal checked the syntax
		*t = text(b)
	}
	return nil
}

// texts is a list of strings read leniently (null is empty).
type texts []text

func (ts texts) strings() []string {
	if len(ts) == 0 {
		return nil
	}
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = string(t)
	}
	return out
}

type wireUser struct {
	Password   text `json:"password"`
	UserStatus text `json:"userStatus"`
	UserType   text `json:"userType"`
	Username   text `json:"username"`
}

func (w wireUser) user() UserInfo {
	return UserInfo{Password: string(w.Password), UserStatus: string(w.UserStatus), UserType: string(w.UserType),
		Username: string(w.Username)}
}

type wireEntry struct {
	Actions   texts `json:"actions"`
	Decision  text  `json:"decision"`
	Resource  text  `json:"resource"`
	SourceIps texts `json:"sourceIps"`
}

type wirePolicy struct {
	Entries    []wireEntry `json:"entries"`
	PolicyType text        `json:"policyType"`
}

type wireACL struct {
	Policies []wirePolicy `json:"policies"`
	Subject  text         `json:"subject"`
}

func (w wireACL) acl() AclInfo {
	a := AclInfo{Subject: string(w.Subject)}
	for _, p := range w.Policies {
		pi := PolicyInfo{PolicyType: string(p.PolicyType)}
		for _, e := range p.Entries {
			pi.Entries = append(pi.Entries, PolicyEntryInfo{Actions: e.Actions.strings(), Decision: string(e.Decision),
				Resource: string(e.Resource), SourceIps: e.SourceIps.strings()})
		}
		a.Policies = append(a.Policies, pi)
	}
	return a
}

// empty reports a body that carries nothing (absent, white space, null).
func empty(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) == 0 || string(b) == "null"
}

// DecodeUserInfo reads a UserInfo body; an empty body is the zero value.
func DecodeUserInfo(b []byte) (UserInfo, error) {
	if empty(b) {
		return UserInfo{}, nil
	}
	var w wireUser
	if err := json.Unmarshal(b, &w); err != nil {
		return UserInfo{}, fmt.Errorf("adminbody: UserInfo: %w", err)
	}
	return w.user(), nil
}

// DecodeUserInfos reads a list of UserInfo (the AUTH_LIST_USER answer); an
// empty body is none.
func DecodeUserInfos(b []byte) ([]UserInfo, error) {
	if empty(b) {
		return nil, nil
	}
	var ws []wireUser
	if err := json.Unmarshal(b, &ws); err != nil {
		return nil, fmt.Errorf("adminbody: UserInfo list: %w", err)
	}
	out := make([]UserInfo, len(ws))
	for i, w := range ws {
		out[i] = w.user()
	}
	return out, nil
}

// DecodeAclInfo reads an AclInfo body; an empty body is the zero value.
func DecodeAclInfo(b []byte) (AclInfo, error) {
	if empty(b) {
		return AclInfo{}, nil
	}
	var w wireACL
	if err := json.Unmarshal(b, &w); err != nil {
		return AclInfo{}, fmt.Errorf("adminbody: AclInfo: %w", err)
	}
	return w.acl(), nil
}

// DecodeAclInfos reads a list of AclInfo (the AUTH_LIST_ACL answer); an
// empty body is none.
func DecodeAclInfos(b []byte) ([]AclInfo, error) {
	if empty(b) {
		return nil, nil
	}
	var ws []wireACL
	if err := json.Unmarshal(b, &ws); err != nil {
		return nil, fmt.Errorf("adminbody: AclInfo list: %w", err)
	}
	out := make([]AclInfo, len(ws))
	for i, w := range ws {
		out[i] = w.acl()
	}
	return out, nil
}

// EncodeAuth writes a UserInfo, AclInfo or a slice of either as fastjson
// does (no HTML escaping, no white space).
func EncodeAuth(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("adminbody: encode: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
