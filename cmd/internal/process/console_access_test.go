package process_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/netloop/remoting/javaprops"
	"github.com/wheelmq/wheelmq/storage/adminbody"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// postFlash posts a console form and returns the answer's code and the
// flash its redirect carries ("" without one).
func (w *webClient) postFlash(path string, form url.Values) (int, string) {
	w.t.Helper()
	resp, err := w.c.PostForm(w.base+path, form)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if loc == nil {
		return resp.StatusCode, ""
	}
	return resp.StatusCode, loc.Query().Get("flash")
}

// login logs a console client in as creds and returns it with a CSRF
// token of its session.
func consoleLogin(t *testing.T, base string, creds auth.Credentials) (*webClient, string) {
	t.Helper()
	w := newWebClient(t, base)
	if code := w.post("/login", url.Values{"accessKey": {creds.AccessKey}, "secret": {creds.SecretKey}}); code != http.StatusSeeOther {
		t.Fatalf("login as %s: %d", creds.AccessKey, code)
	}
	_, body := w.get("/config")
	tok := csrfField.FindStringSubmatch(body)
	if tok == nil {
		t.Fatalf("no CSRF token for %s: %s", creds.AccessKey, body)
	}
	return w, tok[1]
}

// brokerConfigOf asks GET_BROKER_CONFIG as creds: the keys and the
// version's counter.
func brokerConfigOf(t *testing.T, addr string, creds auth.Credentials) (map[string]string, int64) {
	t.Helper()
	resp := signedInvoke(t, addr, remoting.NewRequest(remoting.GetBrokerConfig, nil, nil), creds)
	if resp.Code != remoting.Success {
		t.Fatalf("GET_BROKER_CONFIG: %d %s", resp.Code, resp.Remark)
	}
	entries, err := javaprops.Parse(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	m := make(map[string]string, len(entries))
	for _, e := range entries {
		m[e.Key] = e.Value
	}
	var v meta.DataVersion
	if err := json.Unmarshal([]byte(resp.Field("version")), &v); err != nil {
		t.Fatalf("version %q: %v", resp.Field("version"), err)
	}
	return m, v.Counter
}

// TestConsoleAccessAndConfig: an admin creates an ACL 2.0 user and its
// permission on the Access page and the official Go client sends with it;
// a configuration change on the Configuration page is what
// GET_BROKER_CONFIG then answers; a non-admin is refused every change,
// through the console and through the admin requests alike; the broker
// API decides (a Super user demoted while logged in is refused by it), and
// no page ever shows a secret.
func TestConsoleAccessAndConfig(t *testing.T) {
	t.Parallel() // its own broker (and browser): overlaps with the package's other parallel tests
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	viewer := auth.Credentials{AccessKey: "viewer-app", SecretKey: "viewer-secret"}
	file := aclFile("orders=SUB") + "  - accessKey: viewer-app\n    secretKey: viewer-secret\n    defaultTopicPerm: SUB\n    defaultGroupPerm: SUB\n"
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuf{}
	n := processtest.Start(t, processtest.Options{Admin: aclAdmin, Metrics: true, MutateNode: func(c *process.Config) {
		c.ACL = process.ACLConfig{File: path, Interval: 100 * time.Millisecond}
		c.Console = true
		c.Logger = zerolog.New(logs)
	}})
	base, b, ns := "http://"+n.MetricsAddr(), n.BrokerAddr(), n.NamesrvAddr()
	if r := createTopicAs(t, n, aclAdmin, "orders", 2); r.Code != remoting.Success {
		t.Fatalf("create orders: %d %s", r.Code, r.Remark)
	}

	// An admin makes an account and its permission in the console.
	ops, tok := consoleLogin(t, base, aclAdmin)
	app := auth.Credentials{AccessKey: "app-user", SecretKey: "app-user-secret-1"}
	if code, flash := ops.postFlash("/access/users/create", url.Values{"csrf": {tok}, "name": {app.AccessKey}, "secret": {app.SecretKey},
		"type": {"Normal"}}); code != http.StatusSeeOther || strings.HasPrefix(flash, "failed") {
		t.Fatalf("create user: %d %q", code, flash)
	}
	if code, flash := ops.postFlash("/access/policies/put", url.Values{"csrf": {tok}, "user": {app.AccessKey}, "resource": {"Topic:orders"},
		"action": {"Pub"}, "decision": {"Allow"}, "policyType": {"Custom"}}); code != http.StatusSeeOther || strings.HasPrefix(flash, "failed") {
		t.Fatalf("put policy: %d %q", code, flash)
	}
	code, body := ops.get("/access")
	if code != 200 || strings.Contains(body, `id="error"`) || !strings.Contains(body, `data-user="app-user"`) ||
		!strings.Contains(body, `data-resource="Topic:orders"`) || !strings.Contains(body, "alice-app") {
		t.Fatalf("/access as admin: %d %s", code, body)
	}
	for _, secret := range []string{app.SecretKey, aclAdmin.SecretKey, aclAlice.SecretKey, aclBob.SecretKey} {
		if strings.Contains(body, secret) || strings.Contains(logs.String(), secret) {
			t.Fatalf("a secret (%s) shows on the page or in the log", secret)
		}
	}

	// The official Go client sends with the account made there.
	ctx := context.Background()
	p := processtest.Producer(t, ns, producer.WithCredentials(goCreds(app)), producer.WithRetry(0))
	for range 2 {
		if _, err := p.SendSync(ctx, primitive.NewMessage("orders", []byte("from the console's account"))); err != nil {
			t.Fatalf("send as the console's account: %v", err)
		}
	}
	waitFor(t, 5*time.Second, "the 2 messages", func() bool { return storedIn(n, "orders", 2) >= 2 })

	// A configuration change in the console is what GET_BROKER_CONFIG answers.
	_, v0 := brokerConfigOf(t, b, aclAdmin)
	if code, flash := ops.postFlash("/config/update", url.Values{"csrf": {tok}, "key": {"maxMessageSize"}, "value": {"1048576"}}); code != http.StatusSeeOther || strings.HasPrefix(flash, "failed") {
		t.Fatalf("config update: %d %q", code, flash)
	}
	cfg, v1 := brokerConfigOf(t, b, aclAdmin)
	if cfg["maxMessageSize"] != "1048576" || v1 != v0+1 {
		t.Fatalf("after the console's change GET_BROKER_CONFIG has maxMessageSize=%s version %d (was %d)", cfg["maxMessageSize"], v1, v0)
	}
	code, body = ops.get("/config")
	if code != 200 || !strings.Contains(body, `value="1048576"`) || !strings.Contains(body, `data-key="brokerName"`) {
		t.Fatalf("/config after the change: %d", code)
	}
	// A fixed key is refused with the admin request's reason.
	if _, flash := ops.postFlash("/config/update", url.Values{"csrf": {tok}, "key": {"brokerName"}, "value": {"other"}}); !strings.Contains(flash, "fixed while the broker runs") {
		t.Fatalf("a fixed key's change: %q", flash)
	}

	// A non-admin is refused every change: in the console...
	nonAdmin, atok := consoleLogin(t, base, viewer)
	for _, page := range []string{"/config", "/access"} {
		if code, body := nonAdmin.get(page); code != 200 || !strings.Contains(body, `id="error"`) || strings.Contains(body, "app-user") || strings.Contains(body, `href="/config"`) {
			t.Fatalf("%s as a non-admin: %d, the API's refusal missing", page, code)
		}
	}
	for path, form := range map[string]url.Values{
		"/config/update":          {"key": {"maxMessageSize"}, "value": {"2048"}},
		"/access/users/create":    {"name": {"alice-made"}, "secret": {"alice-made-secret"}, "type": {"Super"}},
		"/access/users/update":    {"name": {app.AccessKey}, "type": {"Super"}},
		"/access/users/delete":    {"name": {app.AccessKey}},
		"/access/policies/put":    {"user": {app.AccessKey}, "resource": {"*"}, "action": {"All"}, "decision": {"Allow"}},
		"/access/policies/delete": {"user": {app.AccessKey}, "policyType": {"Custom"}, "resource": {"Topic:orders"}},
	} {
		form.Set("csrf", atok)
		if code, _ := nonAdmin.postFlash(path, form); code != http.StatusForbidden {
			t.Errorf("%s by a non-admin: %d", path, code)
		}
	}
	// ... and through the admin requests.
	userBody, _ := adminbody.EncodeAuth(adminbody.UserInfo{Username: "alice-made", Password: "alice-made-secret", UserType: "Super"})
	aclBody, _ := adminbody.EncodeAuth(adminbody.AclInfo{Subject: "User:" + app.AccessKey, Policies: []adminbody.PolicyInfo{{
		Entries: []adminbody.PolicyEntryInfo{{Resource: "*", Actions: []string{"All"}, Decision: "Allow"}}}}})
	for _, req := range []*remoting.Command{
		remoting.NewRequest(remoting.UpdateBrokerConfig, nil, []byte("maxMessageSize=2048\n")),
		remoting.NewRequest(remoting.AuthCreateUser, map[string]string{"username": "alice-made"}, userBody),
		remoting.NewRequest(remoting.AuthUpdateUser, map[string]string{"username": app.AccessKey}, userBody),
		remoting.NewRequest(remoting.AuthDeleteUser, map[string]string{"username": app.AccessKey}, nil),
		remoting.NewRequest(remoting.AuthCreateACL, map[string]string{"subject": "User:" + app.AccessKey}, aclBody),
		remoting.NewRequest(remoting.AuthUpdateACL, map[string]string{"subject": "User:" + app.AccessKey}, aclBody),
		remoting.NewRequest(remoting.AuthDeleteACL, map[string]string{"subject": "User:" + app.AccessKey}, nil),
		remoting.NewRequest(remoting.GetBrokerConfig, nil, nil),
		remoting.NewRequest(remoting.AuthListUser, nil, nil),
	} {
		if r := signedInvoke(t, b, req, viewer); r.Code != remoting.NoPermission {
			t.Errorf("request %d by a non-admin: %d %s", req.Code, r.Code, r.Remark)
		}
	}
	cfg, v2 := brokerConfigOf(t, b, aclAdmin)
	if cfg["maxMessageSize"] != "1048576" || v2 != v1 {
		t.Fatalf("the non-admin's attempts changed the configuration: %s, version %d", cfg["maxMessageSize"], v2)
	}
	if _, ok := n.Broker().Pipeline().ACL().Load().User("alice-made"); ok {
		t.Fatal("a non-admin made a user")
	}

	// The broker API decides: a Super user may not delete itself, and once
	// demoted (by an admin request) its console session, still marked
	// admin, is refused by the API.
	ops2 := auth.Credentials{AccessKey: "ops-two", SecretKey: "ops-two-secret"}
	if _, flash := ops.postFlash("/access/users/create", url.Values{"csrf": {tok}, "name": {ops2.AccessKey}, "secret": {ops2.SecretKey},
		"type": {"Super"}}); strings.HasPrefix(flash, "failed") {
		t.Fatalf("create a Super user: %q", flash)
	}
	two, ttok := consoleLogin(t, base, ops2)
	if _, flash := two.postFlash("/access/users/delete", url.Values{"csrf": {ttok}, "name": {ops2.AccessKey}}); !strings.Contains(flash, "may not delete itself") {
		t.Fatalf("a user deleting itself: %q", flash)
	}
	if r := signedInvoke(t, b, remoting.NewRequest(remoting.AuthDeleteUser, map[string]string{"username": ops2.AccessKey}, nil), ops2); r.Code != remoting.NoPermission || !strings.Contains(r.Remark, "may not delete itself") {
		t.Fatalf("AUTH_DELETE_USER of itself: %d %s", r.Code, r.Remark)
	}
	demote, _ := adminbody.EncodeAuth(adminbody.UserInfo{Username: ops2.AccessKey, UserType: "Normal"})
	if r := signedInvoke(t, b, remoting.NewRequest(remoting.AuthUpdateUser, map[string]string{"username": ops2.AccessKey}, demote), ops2); r.Code != remoting.NoPermission || !strings.Contains(r.Remark, "may not disable or demote itself") {
		t.Fatalf("AUTH_UPDATE_USER demoting itself: %d %s", r.Code, r.Remark)
	}
	if r := signedInvoke(t, b, remoting.NewRequest(remoting.AuthUpdateUser, map[string]string{"username": ops2.AccessKey}, demote), aclAdmin); r.Code != remoting.Success {
		t.Fatalf("demote: %d %s", r.Code, r.Remark)
	}
	if code, flash := two.postFlash("/config/update", url.Values{"csrf": {ttok}, "key": {"maxMessageSize"}, "value": {"2048"}}); code != http.StatusSeeOther || !strings.Contains(flash, "is not an admin") {
		t.Fatalf("a demoted user's change: %d %q", code, flash)
	}
	if cfg, _ := brokerConfigOf(t, b, aclAdmin); cfg["maxMessageSize"] != "1048576" {
		t.Fatalf("a demoted user changed maxMessageSize to %s", cfg["maxMessageSize"])
	}

	// Deleting the account in the console refuses its next send.
	if _, flash := ops.postFlash("/access/users/delete", url.Values{"csrf": {tok}, "name": {app.AccessKey}}); strings.HasPrefix(flash, "failed") {
		t.Fatalf("delete user: %q", flash)
	}
	if _, err := p.SendSync(ctx, primitive.NewMessage("orders", []byte("after the delete"))); err == nil {
		t.Fatal("a deleted account's send was stored")
	}
}
