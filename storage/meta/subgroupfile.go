package meta

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// subGroupsFile is the JSON shape of subscriptionGroup.json, a Java
// broker's SubscriptionGroupManager: the groups, RocketMQ 5's per-group
// forbidden bits (read to accept a Java broker's file; wheelmq has no such
// feature and writes the table empty) and the table's version.
type subGroupsFile struct {
	DataVersion            DataVersion                        `json:"dataVersion"`
	ForbiddenTable         map[string]map[string]int32        `json:"forbiddenTable"`
	SubscriptionGroupTable map[string]json.RawMessage         `json:"subscriptionGroupTable"`
	groups                 map[string]SubscriptionGroupConfig `json:"-"`
}

// parseSubscriptionGroups decodes and validates a subscriptionGroup.json
// document; every group is read like an UPDATE_AND_CREATE_SUBSCRIPTIONGROUP
// body (DecodeSubscriptionGroupConfig), so a file a Java broker wrote loads.
func parseSubscriptionGroups(data []byte) (subGroupsFile, error) {
	var f subGroupsFile
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return f, fmt.Errorf("not a JSON object")
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return f, err
	}
	f.groups = make(map[string]SubscriptionGroupConfig, len(f.SubscriptionGroupTable))
	for name, raw := range f.SubscriptionGroupTable {
		c, err := DecodeSubscriptionGroupConfig(raw)
		if err != nil {
			return f, fmt.Errorf("group %q: %w", name, err)
		}
		if c.GroupName == "" {
			c.GroupName = name
		}
		if c.GroupName != name {
			return f, fmt.Errorf("group %q stored under key %q", c.GroupName, name)
		}
		if err := ValidateGroup(name); err != nil {
			return f, err
		}
		f.groups[name] = c
	}
	return f, nil
}

// LoadSubscriptionGroups reads a subscriptionGroup.json written by
// SaveSubscriptionGroups (or by a Java broker), falling back to its .bak
// file as described in the package doc. When neither exists it returns an
// empty map and a zero DataVersion: merge DefaultSubscriptionGroups under
// the result.
func LoadSubscriptionGroups(fs vfs.FS, path string, opts ...Option) (map[string]SubscriptionGroupConfig, DataVersion, error) {
	o := buildOptions(opts)
	f, _, err := loadWithBackup(fs, path, o.log, parseSubscriptionGroups)
	if err != nil {
		return nil, DataVersion{}, err
	}
	if f.groups == nil {
		f.groups = map[string]SubscriptionGroupConfig{}
	}
	return f.groups, f.DataVersion, nil
}

// EncodeSubscriptionGroups renders groups and their version as the JSON of
// subscriptionGroup.json and of the GET_ALL_SUBSCRIPTIONGROUP_CONFIG body
// (compact unless indent): {"dataVersion":{...},"forbiddenTable":{},
// "subscriptionGroupTable":{"G":{...}}}, group names sorted.
func EncodeSubscriptionGroups(groups map[string]SubscriptionGroupConfig, v DataVersion, indent bool) ([]byte, error) {
	table := make(map[string]SubscriptionGroupConfig, len(groups))
	for name, c := range groups {
		c.normalize()
		table[name] = c
	}
	doc := struct {
		DataVersion            DataVersion                        `json:"dataVersion"`
		ForbiddenTable         map[string]map[string]int32        `json:"forbiddenTable"`
		SubscriptionGroupTable map[string]SubscriptionGroupConfig `json:"subscriptionGroupTable"`
	}{v, map[string]map[string]int32{}, table}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encode subscription groups: %w", err)
	}
	out := buf.Bytes()
	if !indent {
		out = bytes.TrimSuffix(out, []byte("\n"))
	}
	return out, nil
}

// SaveSubscriptionGroups writes groups and their version to path, keeping
// the previous file as .bak.
func SaveSubscriptionGroups(fs vfs.FS, path string, groups map[string]SubscriptionGroupConfig, v DataVersion) error {
	data, err := EncodeSubscriptionGroups(groups, v, true)
	if err != nil {
		return fmt.Errorf("meta save %s: %w", path, err)
	}
	return saveWithBackup(fs, path, data, func(b []byte) bool {
		_, err := parseSubscriptionGroups(b)
		return err == nil
	})
}
