package main_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// TestNodeClientACL runs the binary with an ACL file and drives it from
// ali-ons with its keys (testdata/nodeclient/acl.js): ali-ons signs with
// OnsChannel and JSON-number header fields, the official Go client never
// does. Its right keys send and receive; a wrong secret is refused.
func TestNodeClientACL(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	if testing.Short() {
		t.Skip("builds and runs the binary and a Node.js client")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH: the signed ali-ons test cannot run; install Node.js and run `npm ci` in cmd/wheelmq/testdata/nodeclient")
	}
	installNodeDeps(t)
	admin := auth.Credentials{AccessKey: "node-admin", SecretKey: "node-admin-secret"}
	const ak, sk = "node-app-key", "node-app-secret"
	topic := "nodeacl" + strings.ReplaceAll(processtest.Unique(""), "_", "")
	group := topic + "_cg"
	acl := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(acl, []byte("accounts:\n"+
		"  - {accessKey: node-admin, secretKey: node-admin-secret, admin: true}\n"+
		"  - {accessKey: "+ak+", secretKey: "+sk+", topicPerms: ["+topic+"=PUB|SUB], groupPerms: ["+group+"=SUB]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := startWheelmq(t, buildWheelmq(t), "--acl-file", acl)
	resp := processtest.InvokeSigned(t, b.broker, remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": "2", "writeQueueNums": "2", "perm": "6", "topicFilterType": "SINGLE_TAG"}, nil), admin)
	if resp.Code != remoting.Success {
		t.Fatalf("create topic: %d %s", resp.Code, resp.Remark)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 70*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "acl.js")
	cmd.Dir = nodeClientDir
	cmd.Env = append(os.Environ(), "WHEELMQ_NAMESRV="+b.namesrv, "WHEELMQ_TOPIC="+topic, "WHEELMQ_GROUP="+group,
		"WHEELMQ_AK="+ak, "WHEELMQ_SK="+sk)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	events := parseNodeEvents(t, stdout.Bytes())
	res := finalResult(events)
	sent, received, refused := 0, 0, 0
	for _, e := range events {
		switch e.Event {
		case "sent":
			if e.Status == "SEND_OK" {
				sent++
			}
		case "received":
			received++
		case "refused":
			refused++
		}
	}
	if runErr != nil || !res.OK || sent != 3 || received < 3 || refused != 1 {
		t.Fatalf("ali-ons with keys: err %v, ok %v, failures %q, sent %d, received %d, refused %d\nstdout:\n%s\nstderr:\n%s",
			runErr, res.OK, res.Failures, sent, received, refused, stdout.String(), tail(stderr.Bytes(), 4096))
	}
}
