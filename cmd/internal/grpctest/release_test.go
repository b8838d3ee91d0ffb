package grpctest

import (
	"context"
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// TestReceiveReleasedWhenClientLeft: a receive whose client left (it
// cancelled the call) while the broker's pop was parked takes the message
// that arrives next, which never reaches that client; it is released and
// comes to the next receive about 1 s later, not after the 60 s invisible
// time the first receive asked for.
func TestReceiveReleasedWhenClientLeft(t *testing.T) {
	t.Parallel()
	n := node(t, nil, nil)
	topic := processtest.Unique("grpc_release")
	processtest.CreateTopic(t, n, topic, 1)
	group := topic + "_cg"
	cl := rawClient(t, n.GRPCAddr())
	receive := func(ctx context.Context, invisible time.Duration) (*v2.Message, v2.Code) {
		t.Helper()
		rs, err := cl.ReceiveMessage(ctx, &v2.ReceiveMessageRequest{Group: &v2.Resource{Name: group},
			MessageQueue: &v2.MessageQueue{Topic: &v2.Resource{Name: topic}, Id: -1}, BatchSize: 1,
			InvisibleDuration: durationpb.New(invisible), LongPollingTimeout: durationpb.New(5 * time.Second),
			FilterExpression: &v2.FilterExpression{Type: v2.FilterType_TAG, Expression: "*"}})
		if err != nil {
			return nil, v2.Code_CODE_UNSPECIFIED
		}
		var msg *v2.Message
		code := v2.Code_CODE_UNSPECIFIED
		for {
			r, err := rs.Recv()
			if err != nil {
				return msg, code
			}
			if st := r.GetStatus(); st != nil {
				code = st.GetCode()
			}
			if m := r.GetMessage(); m != nil {
				msg = m
			}
		}
	}
	// The first receive parks (nothing stored, a 5 s poll); its client
	// cancels it after 300 ms; the broker's pop stays parked, and takes
	// the message sent after that.
	ctx1, cancel1 := context.WithCancel(withClientID(context.Background(), "release@1@1@test"))
	first := make(chan *v2.Message, 1)
	go func() { m, _ := receive(ctx1, 60*time.Second); first <- m }() // ends with cancel1
	time.Sleep(300 * time.Millisecond)
	cancel1()
	select {
	case m := <-first:
		if m != nil {
			t.Fatalf("the first receive got %q from an empty topic", m.GetBody())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled receive did not end within 10 s")
	}
	sendAt := time.Now()
	sctx, scancel := context.WithTimeout(withClientID(context.Background(), "release-p@1@1@test"), 10*time.Second)
	defer scancel()
	resp, err := cl.SendMessage(sctx, &v2.SendMessageRequest{Messages: []*v2.Message{batchMsg(topic, "RELEASE0", "released")}})
	if err != nil || resp.GetStatus().GetCode() != v2.Code_OK {
		t.Fatalf("send: %v %v", resp.GetStatus(), err)
	}
	// The next receives (another client) get it about 1 s after the first
	// client left, far before 60 s.
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		ctx2, cancel2 := context.WithTimeout(withClientID(context.Background(), "release@2@1@test"), 8*time.Second)
		m, code := receive(ctx2, 30*time.Second)
		cancel2()
		if m != nil {
			if string(m.GetBody()) != "released" {
				t.Fatalf("received %q", m.GetBody())
			}
			t.Logf("received again %.2f s after the send (the first receive asked for 60 s)", time.Since(sendAt).Seconds())
			return
		}
		if code != v2.Code_MESSAGE_NOT_FOUND && code != v2.Code_CODE_UNSPECIFIED {
			t.Fatalf("receive: %v", code)
		}
	}
	t.Fatal("the message the departed receive took did not come back within 15 s of its send: not released")
}
