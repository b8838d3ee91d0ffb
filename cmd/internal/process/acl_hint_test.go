package process_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// TestACLRouteRefusalHint: under an ACL, the official Go client without
// credentials reports "route info not found" (it drops the name server's
// NO_PERMISSION); the process logs the refusal with the request, the
// reason and a hint that names the account problem and the setting that
// fixes it (docs/operations.md, "Access control").
func TestACLRouteRefusalHint(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(path, []byte(aclFile("orders=SUB")), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	n := processtest.Start(t, processtest.Options{Admin: aclAdmin,
		Mutate: func(c *pipeline.Config) { c.Logger = zerolog.New(logs).Level(zerolog.WarnLevel) },
		MutateNode: func(c *process.Config) {
			c.ACL = process.ACLConfig{File: path, Interval: 100 * time.Millisecond}
		}})
	topic := processtest.Unique("hint")
	if resp := createTopicAs(t, n, aclAdmin, topic, 1); resp.Code != 0 {
		t.Fatalf("create topic: %d %s", resp.Code, resp.Remark)
	}
	p := processtest.Producer(t, n.NamesrvAddr())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("x")))
	if err == nil || !strings.Contains(err.Error(), "route info not found") {
		t.Fatalf("send without credentials: %v, want the client's \"route info not found\"", err)
	}
	var found bool
	for _, line := range strings.Split(logs.String(), "\n") {
		var rec struct {
			Message, Reason, Hint, Port string
			Code                        int32 `json:"request_code"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Message != "request refused by the ACL" || rec.Code != 105 {
			continue
		}
		found = true
		if rec.Reason != "anonymous" || rec.Port != "namesrv" || !strings.Contains(rec.Hint, `"route info not found"`) ||
			!strings.Contains(rec.Hint, "no credentials") || !strings.Contains(rec.Hint, "WithCredentials") {
			t.Errorf("refusal logged as %+v", rec)
		}
	}
	if !found {
		t.Fatalf("no refusal of the route lookup logged:\n%s", logs.String())
	}
}
