package securitytest_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/cmd/internal/chaos/cluster"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// The ACL of the deployment: an admin account the brokers sign their own
// traffic with (registrations, controller heartbeats), and the
// application's account.
var (
	admin = auth.Credentials{AccessKey: "wheelmq-admin", SecretKey: "admin-secret-0123456789abcdef"}
	app   = auth.Credentials{AccessKey: "orders-app", SecretKey: "orders-app-secret-0123456789"}
)

const topic = "orders"

var aclFile = `accounts:
  - accessKey: ` + admin.AccessKey + `
    secretKey: ` + admin.SecretKey + `
    admin: true
  - accessKey: ` + app.AccessKey + `
    secretKey: ` + app.SecretKey + `
    topicPerms: [` + topic + `=PUB|SUB]
`

// consoleHost is the one name, besides its address, the console serves
// under (--console-hosts).
const consoleHost = "console.example.internal"

// deployment is the production checklist's cluster (docs/operations.md,
// "Production checklist") on loopback.
type deployment struct {
	*cluster.Cluster
	pki   pki
	https *http.Client
}

// startProduction starts three name servers with controllers and one group
// of three brokers with the checklist's settings. The official Go client
// presents no client certificate, so the deployment is the checklist's
// variant for it: TLS enforcing with a CA-signed certificate and no
// --tls-client-ca (the raft port then runs in "secret" mode, the HA
// stream's proof is bound to its TLS connection).
func startProduction(t *testing.T) *deployment {
	t.Helper()
	bin := processtest.Binary(t)
	if ok, why := cluster.Supports(bin, "broker", "--ha-secret-file", "--console-hosts", "--idle-conn-timeout", "--grpc-signature-skew"); !ok {
		t.Skip(why)
	}
	dir := t.TempDir()
	p := newPKI(t, dir)
	tlsArgs := []string{"--tls-mode", "enforcing", "--tls-cert", p.CertFile, "--tls-key", p.KeyFile, "--idle-conn-timeout", "10s"}
	c := cluster.Start(t, cluster.Config{Bin: bin, Dir: dir, Groups: 1, Replicas: 3, MinInSync: 2, Cluster: "ProdCluster",
		NamesrvArgs: tlsArgs,
		BrokerArgs: append([]string{"--flush", "sync", "--console-hosts", consoleHost, "--grpc-signature-skew", "15m",
			"--auto-create-topic=false", "--auto-create-group=false"}, tlsArgs...),
		// The brokers' admin credentials come from the environment, off
		// their command lines.
		Env:   []string{"WHEELMQ_ACCESS_KEY=" + admin.AccessKey, "WHEELMQ_SECRET_KEY=" + admin.SecretKey},
		ACL:   aclFile,
		Admin: admin, TLS: p.client(), GRPC: true,
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})
	return &deployment{Cluster: c, pki: p,
		https: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: p.client()}}}
}

// invoke sends req, signed by creds, over TLS to addr.
func (d *deployment) invoke(t *testing.T, addr string, req *remoting.Command, creds auth.Credentials) *remoting.Command {
	t.Helper()
	return processtest.InvokeSignedTLS(t, addr, d.pki.client(), req, creds)
}

// createTopic creates topic on the group's master (admin) and waits until
// every name server routes it.
func (d *deployment) createTopic(t *testing.T, master string) {
	t.Helper()
	resp := d.invoke(t, master, remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": "4", "writeQueueNums": "4", "perm": "6", "topicFilterType": "SINGLE_TAG",
	}, nil), admin)
	if resp.Code != remoting.Success {
		t.Fatalf("create topic: %d %s", resp.Code, resp.Remark)
	}
	for _, ns := range d.NamesrvAddrs() {
		deadline := time.Now().Add(20 * time.Second)
		for {
			r := d.invoke(t, ns, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil), app)
			if r.Code == remoting.Success {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no route for %s at %s: %d %s", topic, ns, r.Code, r.Remark)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// metric sums the samples of name whose labels include every one of
// labels ("k=\"v\"") on the process's /metrics (over HTTPS).
func (d *deployment) metric(t *testing.T, addr, name string, labels ...string) float64 {
	t.Helper()
	resp, err := d.https.Get("https://" + addr + "/metrics")
	if err != nil {
		t.Errorf("metrics of %s: %v", addr, err)
		return 0
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || (rest == "" || (rest[0] != '{' && rest[0] != ' ')) {
			continue
		}
		match := true
		for _, l := range labels {
			match = match && strings.Contains(rest, l)
		}
		if !match {
			continue
		}
		if v, err := strconv.ParseFloat(rest[strings.LastIndexByte(rest, ' ')+1:], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// workload is official Go client producers sending with the
// application's account over TLS, each sync send's outcome recorded.
type workload struct {
	p    rocketmq.Producer
	stop chan struct{}
	wg   sync.WaitGroup

	mu     sync.Mutex
	acked  []time.Time // guarded by mu: when each send was acknowledged
	failed []string    // guarded by mu: each failed send, when and why
	n      atomic.Int64
}

// startWorkload starts a producer and waits for its first acknowledged
// send (the sync-state set reaching --min-in-sync-replicas), then keeps
// senders goroutines sending until stopped.
func startWorkload(t *testing.T, namesrvs []string, senders int) *workload {
	t.Helper()
	processtest.QuietClient()
	p, err := rocketmq.NewProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver(namesrvs)),
		producer.WithGroupName("orders-pg"),
		producer.WithInstanceName(processtest.Unique("p")),
		producer.WithCredentials(primitive.Credentials{AccessKey: app.AccessKey, SecretKey: app.SecretKey}),
		producer.WithTls(true), // process-global: every Go client of this binary speaks TLS
		producer.WithRetry(2),
		producer.WithSendMsgTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	w := &workload{p: p, stop: make(chan struct{})}
	t.Cleanup(func() { w.halt(); _ = p.Shutdown() })
	deadline := time.Now().Add(40 * time.Second)
	for {
		res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte("warm-up")))
		if err == nil && res.Status == primitive.SendOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no send acknowledged within 40 s: %v %v", res, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for range senders {
		w.wg.Add(1)
		go w.run()
	}
	return w
}

func (w *workload) run() {
	defer w.wg.Done()
	for {
		select {
		case <-w.stop:
			return
		default:
		}
		body := fmt.Sprintf("order-%d", w.n.Add(1))
		res, err := w.p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(body)))
		now := time.Now()
		w.mu.Lock()
		if err == nil && res.Status == primitive.SendOK {
			w.acked = append(w.acked, now)
		} else {
			w.failed = append(w.failed, fmt.Sprintf("%s %s: %v %v", now.Format("15:04:05.000"), body, res, err))
		}
		w.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
}

// halt stops the senders (idempotent).
func (w *workload) halt() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	w.wg.Wait()
}

// ackedSince counts the sends acknowledged at or after from.
func (w *workload) ackedSince(from time.Time) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, at := range w.acked {
		if !at.Before(from) {
			n++
		}
	}
	return n
}

// waitAcked waits until a send acknowledged after from, up to 10 s.
func (w *workload) waitAcked(from time.Time) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if w.ackedSince(from) > 0 {
			return true
		}
	}
	return false
}

// writeInPlace rewrites path's content through the same inode (truncate,
// then write), as tools that do not write a temporary file and rename do.
func writeInPlace(path string, data []byte) error {
	f, err := os.OpenFile(filepath.Clean(path), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
