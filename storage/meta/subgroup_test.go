package meta

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestDecodeSubscriptionGroupConfigLenient(t *testing.T) {
	def := NewSubscriptionGroupConfig("G")
	with := func(f func(*SubscriptionGroupConfig)) SubscriptionGroupConfig {
		c := def.Clone()
		f(&c)
		return c
	}
	tests := []struct {
		name string
		body string
		want SubscriptionGroupConfig
	}{
		{"only the name: defaults", `{"groupName":"G"}`, def},
		{"Go admin style", `{"GroupName":"G","ConsumeEnable":false,"RetryMaxTimes":3,"RetryQueueNums":2,"BrokerId":0}`,
			with(func(c *SubscriptionGroupConfig) { c.ConsumeEnable, c.RetryMaxTimes, c.RetryQueueNums = false, 3, 2 })},
		{"numbers as strings", `{"groupName":"G","retryMaxTimes":"5","brokerId":"1","consumeTimeoutMinute":"7.0"}`,
			with(func(c *SubscriptionGroupConfig) { c.RetryMaxTimes, c.BrokerID, c.ConsumeTimeoutMinute = 5, 1, 7 })},
		{"booleans as strings and numbers", `{"groupName":"G","consumeEnable":"false","consumeBroadcastEnable":0,"consumeMessageOrderly":"TRUE","notifyConsumerIdsChangedEnable":"N"}`,
			with(func(c *SubscriptionGroupConfig) {
				c.ConsumeEnable, c.ConsumeBroadcastEnable, c.ConsumeMessageOrderly, c.NotifyConsumerIDsChangedEnable = false, false, true, false
			})},
		{"fraction and boolean as numbers", `{"groupName":"G","retryQueueNums":2.9,"groupSysFlag":true}`,
			with(func(c *SubscriptionGroupConfig) { c.RetryQueueNums, c.GroupSysFlag = 2, 1 })},
		{"name as a number", `{"groupName":42}`, with(func(c *SubscriptionGroupConfig) { c.GroupName = "42" })},
		{"name and attribute as objects: their text (package lenient's rule; the name then fails ValidateGroup)",
			`{"groupName":{ "a":1},"attributes":{"x":[1, 2]}}`, with(func(c *SubscriptionGroupConfig) {
				c.GroupName, c.Attributes = `{ "a":1}`, map[string]string{"x": "[1, 2]"}
			})},
		{"boolean as a fraction", `{"groupName":"G","consumeEnable":0.0,"consumeMessageOrderly":1.0}`,
			with(func(c *SubscriptionGroupConfig) { c.ConsumeEnable, c.ConsumeMessageOrderly = false, true })},
		{"nulls keep defaults", `{"groupName":"G","retryMaxTimes":null,"attributes":null,"groupRetryPolicy":null}`, def},
		{"unknown fields ignored", `{"groupName":"G","whatever":{"x":[1]},"consumeFromMinEnable":false}`,
			with(func(c *SubscriptionGroupConfig) { c.ConsumeFromMinEnable = false })},
		{"RocketMQ 5 objects kept", `{"groupName":"G","attributes":{"+a":1},"groupRetryPolicy":{"type":"EXPONENTIAL"},"subscriptionDataSet":[{"topic":"T"}]}`,
			with(func(c *SubscriptionGroupConfig) {
				c.Attributes = map[string]string{"+a": "1"}
				c.GroupRetryPolicy = json.RawMessage(`{"type":"EXPONENTIAL"}`)
				c.SubscriptionDataSet = json.RawMessage(`[{"topic":"T"}]`)
			})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeSubscriptionGroupConfig([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestDecodeSubscriptionGroupConfigRejects(t *testing.T) {
	for _, body := range []string{``, `[]`, `null`, `{"groupName":"G"`, `{"retryMaxTimes":"x"}`,
		`{"retryMaxTimes":4294967296}`, `{"consumeEnable":"maybe"}`, `{"consumeEnable":2}`,
		`{"retryMaxTimes":" 5"}`, `{"retryMaxTimes":"5.5"}`, `{"retryMaxTimes":"1e3"}`,
		`{"groupRetryPolicy":"x"}`, `{"subscriptionDataSet":{}}`, `{"attributes":[1]}`} {
		if _, err := DecodeSubscriptionGroupConfig([]byte(body)); err == nil {
			t.Errorf("%s: accepted", body)
		}
	}
}

func TestValidateGroup(t *testing.T) {
	tests := []struct {
		name   string
		remark string // "" = valid
	}{
		{"billing", ""}, {"CID_ONS-HTTP-PROXY", ""}, {"a%b|c", ""},
		{"", "the specified group is blank"}, {"  ", "the specified group is blank"},
		{"a b", "contains illegal characters"}, {"é", "contains illegal characters"},
		{strings.Repeat("g", 255), ""}, {strings.Repeat("g", 256), "longer than group max length 255"},
	}
	for _, tt := range tests {
		err := ValidateGroup(tt.name)
		switch {
		case tt.remark == "" && err != nil:
			t.Errorf("%q: %v", tt.name, err)
		case tt.remark != "" && (err == nil || !strings.Contains(err.Error(), tt.remark) || !errors.Is(err, ErrInvalidGroup)):
			t.Errorf("%q: got %v, want %q", tt.name, err, tt.remark)
		}
	}
}

func TestSubscriptionGroupsGolden(t *testing.T) {
	groups := DefaultSubscriptionGroups()
	g := NewSubscriptionGroupConfig("billing")
	g.RetryMaxTimes, g.RetryQueueNums, g.ConsumeEnable = 3, 2, false
	groups["billing"] = g
	v := DataVersion{Timestamp: 1700000000000, Counter: 3}
	body, err := EncodeSubscriptionGroups(groups, v, false)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "subscriptionGroup_body.json", append(body, '\n'))
	dir := t.TempDir()
	path := filepath.Join(dir, "subscriptionGroup.json")
	if err := SaveSubscriptionGroups(nil, path, groups, v); err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "subscriptionGroup.json", file)
	back, bv, err := LoadSubscriptionGroups(nil, path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, groups) || bv != v {
		t.Fatalf("round trip:\n got %+v %+v\nwant %+v %+v", back, bv, groups, v)
	}
}

func TestLoadSubscriptionGroupsJavaFile(t *testing.T) {
	groups, v, err := LoadSubscriptionGroups(nil, filepath.Join("testdata", "subscriptionGroup_java.json"))
	if err != nil {
		t.Fatal(err)
	}
	if v.Counter != 3 || v.Timestamp != 1700000000000 || len(groups) != 2 {
		t.Fatalf("version %+v, %d groups", v, len(groups))
	}
	b := groups["billing"]
	if b.RetryMaxTimes != 3 || b.RetryQueueNums != 2 || b.ConsumeBroadcastEnable || b.ConsumeFromMinEnable || !b.ConsumeEnable {
		t.Fatalf("billing = %+v", b)
	}
	if !reflect.DeepEqual(groups["TOOLS_CONSUMER"], NewSubscriptionGroupConfig("TOOLS_CONSUMER")) {
		t.Fatalf("TOOLS_CONSUMER = %+v", groups["TOOLS_CONSUMER"])
	}
}

func TestSubscriptionGroupsBackup(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "subscriptionGroup.json")
	if g, v, err := LoadSubscriptionGroups(nil, path); err != nil || len(g) != 0 || v != (DataVersion{}) {
		t.Fatalf("missing file: %v %v %v", g, v, err)
	}
	first := map[string]SubscriptionGroupConfig{"a": NewSubscriptionGroupConfig("a")}
	second := map[string]SubscriptionGroupConfig{"a": NewSubscriptionGroupConfig("a"), "b": NewSubscriptionGroupConfig("b")}
	if err := SaveSubscriptionGroups(nil, path, first, DataVersion{Counter: 1}); err != nil {
		t.Fatal(err)
	}
	if err := SaveSubscriptionGroups(nil, path, second, DataVersion{Counter: 2}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"subscriptionGroupTable":{"a":{"groupName":"b"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	got, v, err := LoadSubscriptionGroups(nil, path)
	if err != nil || v.Counter != 1 || !reflect.DeepEqual(got, first) {
		t.Fatalf("backup fallback: %v %+v %v", got, v, err)
	}
	if err := os.Remove(path + BackupSuffix); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadSubscriptionGroups(nil, path); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("corrupt without backup: %v", err)
	}
}
