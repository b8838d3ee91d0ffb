package access

import (
	"maps"
	"slices"
	"strings"
)

// AccountInfo is one plain_acl.yml account as an operator may see it:
// never its secret.
type AccountInfo struct {
	Name  string
	Admin bool
	// White is whiteRemoteAddress ("": any address).
	White string
	// DefaultTopicPerm and DefaultGroupPerm are the defaults (DENY, PUB,
	// SUB, PUB|SUB).
	DefaultTopicPerm, DefaultGroupPerm string
	// TopicPerms and GroupPerms are the resources' own entries
	// ("name=PERM"), sorted.
	TopicPerms, GroupPerms []string
}

// Accounts lists the file's accounts by name, without secrets.
func (p *PlainACL) Accounts() []AccountInfo {
	if p == nil {
		return nil
	}
	out := make([]AccountInfo, 0, len(p.accounts))
	for _, name := range slices.Sorted(maps.Keys(p.accounts)) {
		a := p.accounts[name]
		info := AccountInfo{Name: name, Admin: a.admin, DefaultTopicPerm: PermString(a.defTopic.perm),
			DefaultGroupPerm: PermString(a.defGroup.perm), TopicPerms: permList(a.topics), GroupPerms: permList(a.groups)}
		if !a.white.Blank() {
			info.White = a.white.String()
		}
		out = append(out, info)
	}
	return out
}

// GlobalWhite is globalWhiteRemoteAddresses.
func (p *PlainACL) GlobalWhite() []string {
	if p == nil {
		return nil
	}
	out := make([]string, len(p.global))
	for i, g := range p.global {
		out[i] = g.String()
	}
	return out
}

// permList renders a table of permissions as sorted "name=PERM" entries.
func permList(m map[string]permRule) []string {
	out := make([]string, 0, len(m))
	for name, r := range m {
		out = append(out, name+"="+PermString(r.perm))
	}
	slices.SortFunc(out, strings.Compare)
	return out
}
