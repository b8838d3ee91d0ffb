package main

// The global --access-key, --secret-key, --tls, --tls-ca and --tls-insecure
// flags against raw peers (remotingtest) that verify every request's
// signature: they reach the wire of every kind of command (admin session,
// native producer, official Go client, benchmarks), the environment works,
// and the secret never shows.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/netloop/remoting/remotingtest"
)

// The test account. The secret is distinctive so that any leak is found.
const (
	testAK     = "wheelctl-tester"
	testSecret = "Zq7-very-secret-key-91"
)

var testSecrets = map[string]string{testAK: testSecret}

// childCLIEnv set to 1 makes the test binary run as wheelctl (TestMain).
const childCLIEnv = "WHEELCTL_TEST_AS_CLI"

// testHandler is remotingtest.Broker plus the answers the admin and
// benchmark commands of these tests need.
func testHandler(p *remotingtest.Peer, req *remoting.Command) *remoting.Command {
	switch req.Code {
	case remoting.GetAllTopicConfig:
		resp := remoting.NewResponse(req, remoting.Success, "")
		resp.Body = []byte(`{"topicConfigTable":{"orders":{"topicName":"orders","readQueueNums":4,"writeQueueNums":4,"perm":6}}}`)
		return resp
	case remoting.PullMessage:
		return remoting.NewResponse(req, remoting.PullNotFound, "no message")
	}
	return remotingtest.Broker(p, req)
}

// peers starts a broker peer and a name-server peer routing to it.
func peers(t *testing.T, tls *remotingtest.Cert) (ns, broker *remotingtest.Peer) {
	t.Helper()
	o := remotingtest.Options{Secrets: testSecrets, Handler: testHandler}
	if tls != nil {
		o.TLS = tls.ServerConfig()
	}
	broker = remotingtest.Start(t, o)
	o.RouteTo = broker.Addr()
	ns = remotingtest.Start(t, o)
	return ns, broker
}

// noSecret fails the test if the secret shows in any of outs.
func noSecret(t *testing.T, what string, outs ...string) {
	t.Helper()
	for _, out := range outs {
		if strings.Contains(out, testSecret) || strings.Contains(out, testSecret[:12]) {
			t.Errorf("%s: the secret shows in the output:\n%s", what, out)
		}
	}
}

// signedArgs are the flags of the test account.
var signedArgs = []string{"--access-key", testAK, "--secret-key", testSecret}

func TestSecuritySignsEveryCommand(t *testing.T) {
	tests := []struct {
		name string
		args func(ns, broker string) []string
		// codes must each arrive at the broker (b) or name server (n) peer.
		broker, namesrv []int32
		exit            int
	}{
		{"topic list (admin session)", func(_, b string) []string { return []string{"topic", "list", "--broker", b} },
			[]int32{remoting.GetAllTopicConfig}, nil, 0},
		{"send, native producer", func(ns, _ string) []string {
			return []string{"send", "--namesrv", ns, "--topic", "orders", "--count", "3"}
		},
			[]int32{remoting.HeartBeat, remoting.SendMessageV2, remoting.UnregisterClient}, []int32{remoting.GetRouteInfoByTopic}, 0},
		{"send, official client", func(ns, _ string) []string {
			return []string{"send", "--namesrv", ns, "--topic", "orders", "--client", "official"}
		}, []int32{remoting.SendMessage}, []int32{remoting.GetRouteInfoByTopic}, 0},
		{"consume, official client", func(ns, _ string) []string {
			return []string{"consume", "--namesrv", ns, "--topic", "orders", "--wait", "3s"}
		}, []int32{remoting.HeartBeat}, []int32{remoting.GetRouteInfoByTopic}, 0},
		{"bench produce, native", func(ns, _ string) []string {
			return []string{"bench", "produce", "--namesrv", ns, "--count", "50", "--mode", "async", "--json"}
		}, []int32{remoting.SendMessageV2}, []int32{remoting.GetRouteInfoByTopic}, 0},
		{"bench produce, official", func(ns, _ string) []string {
			return []string{"bench", "produce", "--namesrv", ns, "--count", "20", "--client", "official", "--json"}
		}, []int32{remoting.SendMessage}, []int32{remoting.GetRouteInfoByTopic}, 0},
		{"bench timer, lean client", func(_, b string) []string {
			return []string{"bench", "timer", "--broker", b, "--scenario", "spread", "-n", "20", "--conns", "1", "--queues", "1",
				"--window-start", "50ms", "--window-len", "50ms", "--drain", "200ms"}
		}, []int32{remoting.UpdateAndCreateTopic, remoting.PullMessage, remoting.SendMessageV2}, nil, 1}, // the peer delivers nothing
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns, broker := peers(t, nil)
			out, errOut, code := runCLI(t, append(signedArgs, tt.args(ns.Addr(), broker.Addr())...)...)
			if code != tt.exit {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.exit, out, errOut)
			}
			noSecret(t, tt.name, out, errOut)
			for _, c := range tt.broker {
				broker.WaitFor(t, c, 10*time.Second)
			}
			for _, c := range tt.namesrv {
				ns.WaitFor(t, c, 10*time.Second)
			}
			remotingtest.CheckSigned(t, broker.Received(), testAK, false)
			if tt.namesrv != nil {
				remotingtest.CheckSigned(t, ns.Received(), testAK, false)
			}
			if strings.Contains(strings.Join(tt.args("", ""), " "), "--json") && !strings.Contains(out, `"security": "plaintext, signed as `+testAK+`"`) {
				t.Errorf("the report does not say it was signed:\n%s", out)
			}
		})
	}
}

// Without credentials nothing is signed (so the test above can fail); the
// environment gives them as the flags do; an explicit empty flag wins over
// the environment.
func TestSecurityCredentialsFromEnvironment(t *testing.T) {
	tests := []struct {
		name   string
		env    map[string]string
		args   []string
		signed bool
	}{
		{"none", nil, nil, false},
		{"environment", map[string]string{envAccessKey: testAK, envSecretKey: testSecret}, nil, true},
		{"secret from the environment", map[string]string{envSecretKey: testSecret}, []string{"--access-key", testAK}, true},
		{"flags over the environment", map[string]string{envAccessKey: "someone-else", envSecretKey: "other"}, signedArgs, true},
		{"empty flag over the environment", map[string]string{envAccessKey: testAK, envSecretKey: testSecret},
			[]string{"--access-key=", "--secret-key="}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(envAccessKey, "")
			t.Setenv(envSecretKey, "")
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			_, broker := peers(t, nil)
			out, errOut, code := runCLI(t, append(tt.args, "topic", "list", "--broker", broker.Addr())...)
			if code != 0 || !strings.Contains(out, "orders") {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			noSecret(t, tt.name, out, errOut)
			got := broker.WaitFor(t, remoting.GetAllTopicConfig, 5*time.Second)
			if tt.signed {
				remotingtest.CheckSigned(t, got, testAK, false)
				return
			}
			for _, r := range got {
				if r.Signed || r.AccessKey != "" {
					t.Errorf("request %d signed without credentials: %v", r.Code, r.Fields)
				}
			}
		})
	}
}

func TestSecurityTLS(t *testing.T) {
	cert := remotingtest.SelfSigned(t)
	ca := cert.WritePEM(t)
	tests := []struct {
		name string
		args []string
		exit int
		want string // in stderr
	}{
		{"--tls-ca trusts the self-signed certificate", []string{"--tls-ca", ca}, 0, ""},
		{"--tls-insecure", []string{"--tls-insecure"}, 0, ""},
		{"--tls verifies", []string{"--tls"}, 1, "--tls-ca"},
	}
	for _, tt := range tests {
		for _, cmd := range []string{"topic list", "send"} {
			t.Run(tt.name+", "+cmd, func(t *testing.T) {
				ns, broker := peers(t, &cert)
				args := append(append([]string{}, signedArgs...), tt.args...)
				if cmd == "send" {
					args = append(args, "send", "--namesrv", ns.Addr(), "--topic", "orders")
				} else {
					args = append(args, "topic", "list", "--broker", broker.Addr())
				}
				out, errOut, code := runCLI(t, args...)
				if code != tt.exit || !strings.Contains(errOut, tt.want) {
					t.Fatalf("exit %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", code, tt.exit, tt.want, out, errOut)
				}
				noSecret(t, tt.name, out, errOut)
				if tt.exit != 0 {
					if got := append(broker.Received(), ns.Received()...); len(got) != 0 {
						t.Fatalf("requests went to an unverified server: %s", remotingtest.Codes(got))
					}
					return
				}
				remotingtest.CheckSigned(t, broker.Received(), testAK, true)
				if cmd == "send" {
					remotingtest.CheckSigned(t, ns.Received(), testAK, true)
				}
			})
		}
	}
	// A TLS client against a plaintext peer says what to do.
	ns, _ := peers(t, nil)
	_, errOut, code := runCLI(t, "--tls-insecure", "topic", "list", "--namesrv", ns.Addr())
	if code != 1 || !strings.Contains(errOut, "does not answer TLS") {
		t.Fatalf("TLS against plaintext: exit %d, stderr %q", code, errOut)
	}
}

// The official Go client's TLS switch is process-global, so its TLS runs
// go in a child process (this test binary as wheelctl, see TestMain).
func TestSecurityOfficialClientTLS(t *testing.T) {
	cert := remotingtest.SelfSigned(t)
	for _, args := range [][]string{
		{"send", "--client", "official", "--topic", "orders"},
		{"consume", "--topic", "orders", "--wait", "3s"},
	} {
		t.Run(args[0], func(t *testing.T) {
			ns, broker := peers(t, &cert)
			out, errOut, code := runChild(t, append([]string{"--tls-insecure", "--namesrv", ns.Addr()}, args...),
				envAccessKey+"="+testAK, envSecretKey+"="+testSecret)
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			noSecret(t, args[0], out, errOut)
			remotingtest.CheckSigned(t, ns.WaitFor(t, remoting.GetRouteInfoByTopic, 10*time.Second), testAK, true)
			if args[0] == "send" {
				remotingtest.CheckSigned(t, broker.WaitFor(t, remoting.SendMessage, 10*time.Second), testAK, true)
			}
		})
	}
	// --tls alone promises a verification the official client cannot do.
	for _, args := range [][]string{{"send", "--client", "official", "--topic", "o"}, {"consume", "--topic", "o"}} {
		_, errOut, code := runCLI(t, append([]string{"--tls", "--namesrv", "127.0.0.1:1"}, args...)...)
		if code != 2 || !strings.Contains(errOut, "--tls-insecure") {
			t.Errorf("%v with --tls: exit %d, stderr %q; want a usage error naming --tls-insecure", args, code, errOut)
		}
	}
}

// runChild runs this test binary as wheelctl with args and extra env.
func runChild(t *testing.T, args []string, env ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), childCLIEnv+"=1"), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), errOut.String(), ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), 0
}

// The secret never shows: not in --help (even when the environment holds
// it), not in usage errors, not in refusals or failures.
func TestSecuritySecretNeverShows(t *testing.T) {
	t.Setenv(envSecretKey, testSecret)
	t.Setenv(envAccessKey, testAK)
	refusing := remotingtest.Start(t, remotingtest.Options{Handler: func(_ *remotingtest.Peer, req *remoting.Command) *remoting.Command {
		return remoting.NewResponse(req, remoting.NoPermission, "NO_PERMISSION: account "+req.Field("AccessKey")+" may not do that")
	}})
	cert := remotingtest.SelfSigned(t)
	tlsPeer := remotingtest.Start(t, remotingtest.Options{TLS: cert.ServerConfig()})
	tests := []struct {
		args []string
		exit int
	}{
		{[]string{"--help"}, 0},
		{[]string{"send", "--help"}, 0},
		{[]string{"bench", "produce", "--help"}, 0},
		{[]string{"--access-key=", "topic", "list", "--broker", refusing.Addr()}, 2},  // a secret without a key
		{[]string{"--secret-key=", "topic", "list", "--broker", refusing.Addr()}, 2},  // a key without its secret
		{[]string{"--tls-ca", "/nonexistent", "topic", "list", "--broker", "x:1"}, 2}, // a bad CA file
		{[]string{"--tls-ca", "x", "--tls-insecure", "topic", "list", "--broker", "x:1"}, 2},
		{[]string{"topic", "list", "--broker", refusing.Addr()}, 1},                         // refused
		{[]string{"send", "--namesrv", refusing.Addr(), "--topic", "t"}, 1},                 // refused route
		{[]string{"topic", "list", "--broker", closedAddr(t)}, 1},                           // unreachable
		{[]string{"--tls", "topic", "list", "--broker", tlsPeer.Addr()}, 1},                 // untrusted certificate
		{[]string{"--secret-key", testSecret + "x", "topic", "list", "--broker", "x:1"}, 1}, // unresolvable
	}
	for _, tt := range tests {
		out, errOut, code := runCLI(t, tt.args...)
		if code != tt.exit {
			t.Errorf("%v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", tt.args, code, tt.exit, out, errOut)
		}
		noSecret(t, strings.Join(tt.args, " "), out, errOut)
	}
}

// The flags show in every command's help, and a JSON report says how the
// run was secured.
func TestSecurityHelpAndReport(t *testing.T) {
	out, _, _ := runCLI(t, "bench", "produce", "--help")
	for _, f := range []string{"--access-key", "--secret-key", "--tls", "--tls-ca", "--tls-insecure", envSecretKey} {
		if !strings.Contains(out, f) {
			t.Errorf("bench produce --help lacks %s", f)
		}
	}
	cert := remotingtest.SelfSigned(t)
	ns, _ := peers(t, &cert)
	out = mustRun(t, "bench", "produce", "--tls-ca", cert.WritePEM(t), "--namesrv", ns.Addr(), "--count", "10", "--json")
	var rep benchReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Security != "TLS, unsigned" || rep.Results[0].Messages != 10 {
		t.Fatalf("report %+v (%v)", rep, err)
	}
	_, errOut, code := runCLI(t, "bench", "produce", "--tls-insecure", "--peer", "--namesrv", ns.Addr())
	if code != 2 || !strings.Contains(errOut, "plaintext only") {
		t.Fatalf("--peer with TLS: exit %d, %q", code, errOut)
	}
}
