package console

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"
)

// The fake's Access and Configuration calls: each change is recorded.

func (f *fake) Accounts(context.Context, Credentials) (Accounts, error) {
	return Accounts{FilePath: "/etc/wheelmq/plain_acl.yml",
		File:  []FileAccount{{AccessKey: "admin", Admin: true, DefaultTopicPerm: "DENY", DefaultGroupPerm: "SUB"}},
		Users: []ACLUser{{Name: "alice", Type: "Normal", Status: "enable", Entries: []PolicyEntry{{PolicyType: "Custom", Resource: "Topic:orders", Actions: []string{"Pub"}, Decision: "Allow"}}}}}, nil
}
func (f *fake) CreateUser(_ context.Context, _ Credentials, name, password, typ string) error {
	f.change("create user " + name + " " + typ + " " + password)
	return nil
}
func (f *fake) UpdateUser(_ context.Context, _ Credentials, name, password, typ, status string) error {
	f.change("update user " + name + " " + typ + " " + status)
	return nil
}
func (f *fake) DeleteUser(_ context.Context, _ Credentials, name string) error {
	f.change("delete user " + name)
	return nil
}
func (f *fake) PutPolicy(_ context.Context, _ Credentials, user string, e PolicyEntry) error {
	f.change("put " + user + " " + e.Resource + " " + strings.Join(e.Actions, ",") + " " + strings.Join(e.SourceIPs, ",") + " " + e.Decision)
	return nil
}
func (f *fake) DeletePolicy(_ context.Context, _ Credentials, user, typ, resource string) error {
	f.change("delete policy " + user + " " + typ + " " + resource)
	return nil
}
func (f *fake) BrokerConfig(context.Context, Credentials) (BrokerConfig, error) {
	return BrokerConfig{Version: 3, Keys: []ConfigKey{{Key: "brokerName", Value: "broker-a"}, {Key: "maxMessageSize", Value: "4194304", Changeable: true}}}, nil
}
func (f *fake) UpdateBrokerConfig(_ context.Context, _ Credentials, values map[string]string) error {
	keys := make([]string, 0, len(values))
	for k, v := range values {
		keys = append(keys, k+"="+v)
	}
	sort.Strings(keys)
	f.change("config " + strings.Join(keys, ","))
	return nil
}

// TestAccessAndConfigPages: both pages render, the Access page says when
// access control is off, and every form reaches its call.
func TestAccessAndConfigPages(t *testing.T) {
	f := newFake(false, 3)
	srv, cl := serve(t, f)
	code, body, _ := get(t, cl, srv.URL+"/access")
	if code != 200 || !strings.Contains(body, `id="acl-off"`) || strings.Contains(body, `id="error"`) {
		t.Fatalf("/access without ACL: %d %s", code, body)
	}
	if strings.Contains(body, `href="/access"`) {
		t.Fatalf("the Access link shows without ACL")
	}
	code, body, _ = get(t, cl, srv.URL+"/config")
	if code != 200 || !strings.Contains(body, `data-key="maxMessageSize"`) || !strings.Contains(body, `action="/config/update"`) {
		t.Fatalf("/config: %d %s", code, body)
	}
	if strings.Count(body, `action="/config/update"`) != 1 {
		t.Fatalf("a fixed key has a form")
	}
	tok := csrfOf(t, body)
	for path, form := range map[string]url.Values{
		"/config/update":          {"key": {"maxMessageSize"}, "value": {" 1024 "}},
		"/access/users/create":    {"name": {"bob"}, "secret": {"bob-secret-1"}, "type": {"Normal"}},
		"/access/users/update":    {"name": {"bob"}, "status": {"disable"}},
		"/access/users/delete":    {"name": {"bob"}},
		"/access/policies/put":    {"user": {"bob"}, "resource": {"Topic:t1"}, "action": {"Pub", "Sub"}, "sourceIps": {"10.0.0.0/8, 192.168.1.1"}, "decision": {"Allow"}},
		"/access/policies/delete": {"user": {"bob"}, "policyType": {"Custom"}, "resource": {"Topic:t1"}},
	} {
		form.Set("csrf", tok)
		if code, h := post(t, cl, srv.URL+path, form); code != http.StatusSeeOther || strings.Contains(h.Get("Location"), "failed") {
			t.Fatalf("%s: %d %s", path, code, h.Get("Location"))
		}
	}
	got := strings.Join(f.changed(), "|")
	for _, w := range []string{"config maxMessageSize=1024", "create user bob Normal bob-secret-1", "update user bob  disable",
		"delete user bob", "put bob Topic:t1 Pub,Sub 10.0.0.0/8,192.168.1.1 Allow", "delete policy bob Custom Topic:t1"} {
		if !strings.Contains(got, w) {
			t.Fatalf("changes %q lack %q", got, w)
		}
	}
}

// TestAccessNeedsAdmin: with ACL the Access page lists accounts without a
// secret, and a reader's changes are refused before any call.
func TestAccessNeedsAdmin(t *testing.T) {
	f := newFake(true, 3)
	srv, cl := serve(t, f)
	if code, _ := post(t, cl, srv.URL+"/login", url.Values{"accessKey": {"admin"}, "secret": {"admin-secret"}}); code != http.StatusSeeOther {
		t.Fatalf("admin login: %d", code)
	}
	code, body, _ := get(t, cl, srv.URL+"/access")
	if code != 200 || !strings.Contains(body, `data-user="alice"`) || !strings.Contains(body, `id="file-accounts"`) || !strings.Contains(body, `href="/access"`) {
		t.Fatalf("/access as admin: %d %s", code, body)
	}
	if strings.Contains(body, "admin-secret") {
		t.Fatalf("the page shows a secret")
	}
	jar, _ := cookiejar.New(nil)
	reader := &http.Client{Jar: jar, Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	srv2 := srv
	if code, _ := post(t, reader, srv2.URL+"/login", url.Values{"accessKey": {"reader"}, "secret": {"reader-secret"}}); code != http.StatusSeeOther {
		t.Fatalf("reader login: %d", code)
	}
	_, body, _ = get(t, reader, srv2.URL+"/config")
	tok := csrfOf(t, body)
	if strings.Contains(body, `action="/config/update"`) {
		t.Fatalf("a reader sees the config forms")
	}
	for _, path := range []string{"/config/update", "/access/users/create", "/access/users/update", "/access/users/delete",
		"/access/policies/put", "/access/policies/delete"} {
		if code, _ := post(t, reader, srv2.URL+path, url.Values{"csrf": {tok}, "name": {"x"}, "key": {"maxMessageSize"}, "value": {"1"}}); code != http.StatusForbidden {
			t.Fatalf("%s by a reader: %d", path, code)
		}
	}
	if ch := f.changed(); len(ch) != 0 {
		t.Fatalf("a reader changed %v", ch)
	}
}

func TestTopicKind(t *testing.T) {
	for name, want := range map[string]string{"%RETRY%billing": "retry", "%DLQ%billing": "dead letters", "rmq_sys_wheel_timer": "timer",
		"SCHEDULE_TOPIC_XXXX": "timer", "rmq_sys_wheelmq_pop": "pop", "rmq_sys_REVIVE_LOG_DefaultCluster": "pop", "TBW102": "system",
		"RMQ_SYS_TRANS_HALF_TOPIC": "system", "DefaultCluster": "system"} {
		if got := topicKind(name); got != want {
			t.Errorf("topicKind(%s) = %q, want %q", name, got, want)
		}
	}
}
