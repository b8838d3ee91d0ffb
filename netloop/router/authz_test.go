package router

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"testing"

	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// No silent default-allow: every code the router serves has a rule, and
// every rule is for a code it serves.
func TestEveryHandledCodeHasARule(t *testing.T) {
	for code := range handlers {
		r, ok := Permissions[code]
		if !ok || r.Needs == nil || r.Doc == "" {
			t.Errorf("request code %d is served without a rule in Permissions", code)
		}
	}
	for code := range Permissions {
		if _, ok := handlers[code]; !ok {
			t.Errorf("Permissions has a rule for %d, which the router does not serve", code)
		}
	}
	if n := Permissions.NeedsOf(remoting.NewRequest(9999, nil, nil)); !n.Admin {
		t.Errorf("an unknown code needs %+v, want admin", n)
	}
}

// docs/compatibility.md's "Broker port" table is the table.
func TestPermissionsDocumented(t *testing.T) {
	checkPermissionsDoc(t, "### Broker port", Permissions)
}

// checkPermissionsDoc checks that the section's rows list exactly the
// table's codes with their Doc.
func checkPermissionsDoc(t *testing.T, heading string, tb auth.Table) {
	t.Helper()
	doc, err := os.ReadFile("../../docs/compatibility.md")
	if err != nil {
		t.Fatal(err)
	}
	sec := regexp.MustCompile(`(?s)` + regexp.QuoteMeta(heading) + `\n(.*?)\n\n`).FindSubmatch(doc)
	if sec == nil {
		t.Fatalf("docs/compatibility.md has no %q section", heading)
	}
	got := map[int32]string{}
	for _, m := range regexp.MustCompile(`(?m)^\| (\d+) \| [A-Z0-9_]+ \| (.*) \|$`).FindAllSubmatch(sec[1], -1) {
		var code int32
		fmt.Sscan(string(m[1]), &code)
		got[code] = string(m[2])
	}
	want := map[int32]string{}
	for code, r := range tb {
		want[code] = r.Doc
	}
	if !reflect.DeepEqual(got, want) {
		for code, d := range want {
			if got[code] != d {
				t.Errorf("code %d: docs say %q, the table %q", code, got[code], d)
			}
		}
		for code := range got {
			if _, ok := want[code]; !ok {
				t.Errorf("docs list %d, which has no rule", code)
			}
		}
	}
}

func TestRuleNeeds(t *testing.T) {
	sub := func(k auth.Kind, name string) auth.Need { return auth.Need{Kind: k, Name: name, Perm: auth.PermSub} }
	pub := func(name string) auth.Need { return auth.Need{Kind: auth.KindTopic, Name: name, Perm: auth.PermPub} }
	hb := `{"clientID":"c","producerDataSet":[{"groupName":"pg"}],"consumerDataSet":[{"groupName":"cg","consumeType":"CONSUME_PASSIVELY",` +
		`"messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","subscriptionDataSet":[{"topic":"T1","subString":"*"},` +
		`{"topic":"%RETRY%cg","subString":"*"}]}]}`
	tests := []struct {
		name string
		cmd  *remoting.Command
		want auth.Needs
	}{
		{"send V1", remoting.NewRequest(remoting.SendMessage, map[string]string{"topic": "T"}, nil), auth.Needs{Resources: []auth.Need{pub("T")}}},
		{"send V2", remoting.NewRequest(remoting.SendMessageV2, map[string]string{"b": "T"}, nil), auth.Needs{Resources: []auth.Need{pub("T")}}},
		{"send V2 with V1 keys", remoting.NewRequest(remoting.SendMessageV2, map[string]string{"topic": "T", "b": "X"}, nil),
			auth.Needs{Resources: []auth.Need{pub("T")}}},
		{"batch", remoting.NewRequest(remoting.SendBatchMessage, map[string]string{"b": "T"}, nil), auth.Needs{Resources: []auth.Need{pub("T")}}},
		{"retry send", remoting.NewRequest(remoting.SendMessageV2, map[string]string{"b": "%RETRY%g"}, nil),
			auth.Needs{Resources: []auth.Need{sub(auth.KindGroup, "g")}}},
		{"pull", remoting.NewRequest(remoting.PullMessage, map[string]string{"topic": "T", "consumerGroup": "g"}, nil),
			auth.Needs{Resources: []auth.Need{sub(auth.KindTopic, "T"), sub(auth.KindGroup, "g")}}},
		{"heartbeat", remoting.NewRequest(remoting.HeartBeat, nil, []byte(hb)),
			auth.Needs{Resources: []auth.Need{sub(auth.KindGroup, "cg"), sub(auth.KindTopic, "T1"), sub(auth.KindGroup, "cg")}}},
		{"producer heartbeat", remoting.NewRequest(remoting.HeartBeat, nil, []byte(`{"clientID":"c","producerDataSet":[{"groupName":"pg"}]}`)),
			auth.Needs{}},
		{"lock", remoting.NewRequest(remoting.LockBatchMQ, nil, []byte(`{"consumerGroup":"g","clientId":"c","mqSet":[{"topic":"T","brokerName":"b","queueId":1}]}`)),
			auth.Needs{Resources: []auth.Need{sub(auth.KindGroup, "g"), sub(auth.KindTopic, "T")}}},
		{"send back", remoting.NewRequest(remoting.ConsumerSendMsgBack, map[string]string{"group": "g", "offset": "1"}, nil),
			auth.Needs{Resources: []auth.Need{sub(auth.KindGroup, "g")}, Deferred: auth.PermSub}},
		{"cancel", remoting.NewRequest(remoting.CancelTimerMessage, map[string]string{"msgId": "x"}, nil), auth.Needs{Deferred: auth.PermPub}},
		{"end transaction", remoting.NewRequest(remoting.EndTransaction, nil, nil), auth.Needs{Deferred: auth.PermPub}},
		{"create topic", remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{"topic": "T"}, nil), auth.Needs{Admin: true}},
		{"route on the broker port", remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "T"}, nil), auth.Needs{Admin: true}},
	}
	for _, tt := range tests {
		if got := Permissions.NeedsOf(tt.cmd); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
