package auth

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"

	"github.com/wheelmq/wheelmq/actors/access"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

const guardACL = `
globalWhiteRemoteAddresses: [10.10.*.*]
accounts:
  - accessKey: alice-app
    secretKey: alice-secret
    topicPerms: [orders=PUB, prices=SUB]
    groupPerms: [billing=SUB]
  - accessKey: admin-ops
    secretKey: admin-secret
    admin: true
  - accessKey: office-only
    secretKey: office-secret
    whiteRemoteAddress: 192.168.1.*
    defaultTopicPerm: PUB|SUB
`

func newTestGuard(t testing.TB, bypass bool, log *bytes.Buffer) (*Guard, *prometheus.Registry) {
	t.Helper()
	acl, err := access.ParsePlainACL([]byte(guardACL), "acl.yml")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	lg := zerolog.Nop()
	if log != nil {
		lg = zerolog.New(log)
	}
	return NewGuard(GuardOptions{Source: Fixed{acl}, IPBypass: bypass, Logger: lg, Registerer: reg}), reg
}

func signed(code int32, fields map[string]string, body []byte, ak, sk string) *remoting.Command {
	cmd := remoting.NewRequest(code, fields, body)
	if ak != "" {
		Sign(cmd, ak, sk, "")
	}
	return cmd
}

var (
	office  = netip.MustParseAddrPort("192.168.1.20:5000")
	outside = netip.MustParseAddrPort("172.16.0.9:5000")
	white   = netip.MustParseAddrPort("10.10.3.4:5000")
)

func pub(topic string) Needs { return Needs{Resources: []Need{TopicNeed(topic, PermPub)}} }

func TestGuardCheck(t *testing.T) {
	tampered := signed(10, map[string]string{"topic": "orders"}, []byte("b"), "alice-app", "alice-secret")
	tampered.Body = []byte("B")
	huge := remoting.NewRequest(10, map[string]string{"AccessKey": strings.Repeat("k", 300), "Signature": "x"}, nil)
	tests := []struct {
		name   string
		remote netip.AddrPort
		cmd    *remoting.Command
		needs  Needs
		reason Reason
		remark string
	}{
		{"right key", outside, signed(10, map[string]string{"topic": "orders"}, []byte("b"), "alice-app", "alice-secret"), pub("orders"), 0, ""},
		{"anonymous", outside, signed(10, map[string]string{"topic": "orders"}, nil, "", ""), pub("orders"), ReasonAnonymous,
			"[ACL] anonymous request refused: sign it with an AccessKey"},
		{"anonymous from a whitelisted address", white, signed(10, nil, nil, "", ""), pub("orders"), ReasonAnonymous, ""},
		{"wrong secret", outside, signed(10, map[string]string{"topic": "orders"}, nil, "alice-app", "guess"), pub("orders"), ReasonBadSignature,
			"[ACL] accessKey alice-app: unknown, or the signature does not match its secret"},
		{"unknown key", outside, signed(10, nil, nil, "mallory", "x"), pub("orders"), ReasonUnknownKey,
			"[ACL] accessKey mallory: unknown, or the signature does not match its secret"},
		{"huge key", outside, huge, pub("orders"), ReasonUnknownKey, "[ACL] accessKey of 300 bytes refused (at most 256)"},
		{"modified body", outside, tampered, pub("orders"), ReasonBadSignature, ""},
		{"no permission", outside, signed(10, map[string]string{"topic": "prices"}, nil, "alice-app", "alice-secret"), pub("prices"),
			ReasonPermission, "[ACL] accessKey alice-app: no PUB on topic prices (rule topicPerms prices=SUB)"},
		{"default deny", outside, signed(10, nil, nil, "alice-app", "alice-secret"), pub("other"),
			ReasonPermission, "[ACL] accessKey alice-app: no PUB on topic other (rule defaultTopicPerm (absent: DENY))"},
		{"retry topic needs group SUB", outside, signed(10, nil, nil, "alice-app", "alice-secret"), pub("%RETRY%billing"), 0, ""},
		{"admin only", outside, signed(17, nil, nil, "alice-app", "alice-secret"), Needs{Admin: true}, ReasonAdminOnly,
			"[ACL] accessKey alice-app: request code 17 needs an admin account"},
		{"admin", outside, signed(17, nil, nil, "admin-ops", "admin-secret"), Needs{Admin: true}, 0, ""},
		{"address allowed", office, signed(10, nil, nil, "office-only", "office-secret"), pub("x"), 0, ""},
		{"address refused", outside, signed(10, nil, nil, "office-only", "office-secret"), pub("x"), ReasonAddress,
			"[ACL] accessKey office-only may not be used from 172.16.0.9 (rule whiteRemoteAddress 192.168.1.*)"},
		{"address rule needs a signature", office, signed(10, nil, nil, "office-only", "wrong"), pub("x"), ReasonBadSignature, ""},
	}
	g, _ := newTestGuard(t, false, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := g.Check(tt.remote, tt.cmd, tt.needs)
			switch {
			case tt.reason == 0 && ref != nil:
				t.Fatalf("refused: %v", ref)
			case tt.reason != 0 && (ref == nil || ref.Reason != tt.reason):
				t.Fatalf("got %+v, want reason %v", ref, tt.reason)
			case tt.remark != "" && ref.Remark != tt.remark:
				t.Fatalf("remark %q, want %q", ref.Remark, tt.remark)
			}
			if ref != nil && strings.Contains(ref.Remark, "secret\"") {
				t.Fatalf("remark shows a secret: %q", ref.Remark)
			}
		})
	}
}

func TestGuardIPBypass(t *testing.T) {
	g, reg := newTestGuard(t, true, nil)
	if ref := g.Check(white, signed(17, nil, nil, "", ""), Needs{Admin: true}); ref != nil {
		t.Fatalf("global whitelist with bypass: %v", ref)
	}
	if ref := g.Check(office, signed(17, map[string]string{"AccessKey": "office-only"}, nil, "", ""), Needs{Admin: true}); ref != nil {
		t.Fatalf("account whitelist with bypass: %v", ref)
	}
	if ref := g.Check(outside, signed(17, nil, nil, "", ""), Needs{Admin: true}); ref == nil || ref.Reason != ReasonAnonymous {
		t.Fatalf("outside the whitelist: %v", ref)
	}
	if n := counters(t, reg)["wheelmq_auth_bypassed_total"]; n != 2 {
		t.Fatalf("bypassed %v", n)
	}
}

// counters gathers reg's counters as name{labels} -> value.
func counters(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += "{" + l.GetName() + "=" + l.GetValue() + "}"
			}
			out[name] = m.GetCounter().GetValue()
		}
	}
	return out
}

// Refusals are counted by reason, and logged at most once a second per
// reason with the count of the lines left out.
func TestGuardRefusalsCountedAndRateLimited(t *testing.T) {
	var log bytes.Buffer
	g, reg := newTestGuard(t, false, &log)
	for range 1000 {
		g.Check(outside, signed(10, nil, nil, "", ""), pub("orders"))
	}
	g.Check(outside, signed(10, nil, nil, "alice-app", "bad"), pub("orders"))
	got := counters(t, reg)
	for name, want := range map[string]float64{"wheelmq_auth_refused_total{reason=anonymous}": 1000,
		"wheelmq_auth_refused_total{reason=bad_signature}": 1, "wheelmq_auth_refused_total{reason=permission}": 0} {
		if got[name] != want {
			t.Errorf("%s = %v, want %v", name, got[name], want)
		}
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"reason":"anonymous"`) || !strings.Contains(lines[0], `"remote":"172.16.0.9:5000"`) ||
		!strings.Contains(lines[1], `"access_key":"alice-app"`) {
		t.Fatalf("log:\n%s", log.String())
	}
	if strings.Contains(log.String(), "alice-secret") {
		t.Fatal("a secret was logged")
	}
}

func TestCheckDeferred(t *testing.T) {
	g, _ := newTestGuard(t, false, nil)
	cmd := signed(3501, map[string]string{"msgId": "X"}, nil, "alice-app", "alice-secret")
	if ref := g.CheckDeferred(outside, cmd, PermPub, "orders"); ref != nil {
		t.Fatal(ref)
	}
	if ref := g.CheckDeferred(outside, cmd, PermPub, "prices"); ref == nil || ref.Reason != ReasonPermission {
		t.Fatal(ref)
	}
}

// view parses cmd's frame as the hot path does.
func view(t testing.TB, cmd *remoting.Command) *remoting.HeaderView {
	t.Helper()
	f, err := remoting.EncodeFrame(cmd)
	if err != nil {
		t.Fatal(err)
	}
	var v remoting.HeaderView
	if err := v.Parse(f[4:]); err != nil {
		t.Fatal(err)
	}
	return &v
}

func TestAllowView(t *testing.T) {
	g, _ := newTestGuard(t, false, nil)
	var c ViewCache
	for _, st := range []remoting.SerializeType{remoting.SerializeJSON, remoting.SerializeRocketMQ} {
		mk := func(ak, sk, topic string) *remoting.Command {
			cmd := signed(310, map[string]string{"a": "g", "b": topic, "i": "UNIQ_KEY\x01x"}, []byte("body"), ak, sk)
			cmd.Serialize = st
			return cmd
		}
		ok := mk("alice-app", "alice-secret", "orders")
		if !g.AllowView(outside, view(t, ok), TopicNeed("orders", PermPub), &c) {
			t.Fatalf("%v: a right signature declined", st)
		}
		for name, cmd := range map[string]*remoting.Command{
			"wrong secret": mk("alice-app", "x", "orders"), "unknown": mk("nobody-here", "x", "orders"), "anonymous": mk("", "", "orders"),
		} {
			if g.AllowView(outside, view(t, cmd), TopicNeed("orders", PermPub), &c) {
				t.Errorf("%v %s: allowed", st, name)
			}
		}
		if g.AllowView(outside, view(t, mk("alice-app", "alice-secret", "prices")), TopicNeed("prices", PermPub), &c) {
			t.Errorf("%v: no permission, allowed", st)
		}
		tok := mk("alice-app", "alice-secret", "orders")
		tok.ExtFields[FieldSecurityToken] = "tok" // after signing: the Go client's form
		if !g.AllowView(outside, view(t, tok), TopicNeed("orders", PermPub), &c) {
			t.Errorf("%v: Go client's SecurityToken form declined", st)
		}
	}
	v := view(t, signed(310, map[string]string{"b": "orders"}, []byte("body"), "alice-app", "alice-secret"))
	need := TopicNeed("orders", PermPub)
	if n := testing.AllocsPerRun(100, func() { g.AllowView(outside, v, need, &c) }); n != 0 {
		t.Errorf("AllowView allocates %v times per request", n)
	}
}

// FuzzAllowView holds the hot path's check to Check's: whatever the
// fields, AllowView never allows what Check refuses.
func FuzzAllowView(f *testing.F) {
	f.Add("alice-app", "alice-secret", "orders", "x", []byte("b"), false)
	f.Add("alice-app", "alice-secret", "orders", "", []byte(nil), true)
	f.Add("office-only", "office-secret", "orders", "tok", []byte("b"), false)
	g, _ := newTestGuard(f, false, nil)
	f.Fuzz(func(t *testing.T, ak, sk, topic, extra string, body []byte, binary bool) {
		cmd := remoting.NewRequest(310, map[string]string{"b": topic, "z": extra}, body)
		if ak != "" {
			Sign(cmd, ak, sk, "")
		}
		if binary {
			cmd.Serialize = remoting.SerializeRocketMQ
			cmd.ExtFields[FieldSecurityToken] = extra
		}
		fr, err := remoting.EncodeFrame(cmd)
		if err != nil {
			return
		}
		var v remoting.HeaderView
		if v.Parse(fr[4:]) != nil {
			return
		}
		dec, err := remoting.DecodeFrame(fr[4:])
		if err != nil {
			t.Fatal(err)
		}
		var c ViewCache
		need := TopicNeed(topic, PermPub)
		if g.AllowView(outside, &v, need, &c) && g.Check(outside, dec, Needs{Resources: []Need{need}}) != nil {
			t.Fatalf("AllowView allowed what Check refuses: %+v", dec.ExtFields)
		}
	})
}

// BenchmarkAllowView is the hot path's check of one signed SEND_MESSAGE_V2
// as the Go client sends it (256-byte body).
func BenchmarkAllowView(b *testing.B) {
	g, _ := newTestGuard(b, false, nil)
	cmd := signed(310, map[string]string{"a": "bench_group", "b": "orders", "c": "TBW102", "d": "4", "e": "1", "f": "0",
		"g": "1700000000000", "h": "0", "i": "UNIQ_KEY\x017F0000010000000000000001\x02WAIT\x01true\x02TAGS\x01TagA", "j": "0", "k": "false",
		"m": "false", "n": "broker-a"}, make([]byte, 256), "alice-app", "alice-secret")
	v := view(b, cmd)
	var c ViewCache
	need := TopicNeed("orders", PermPub)
	b.ReportAllocs()
	for b.Loop() {
		if !g.AllowView(outside, v, need, &c) {
			b.Fatal("declined")
		}
	}
}
