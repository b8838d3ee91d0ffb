package main

// Helpers of the replicated-group tests over gRPC: a raw send to one
// endpoint, and the figures of a process's /metrics.

import (
	"context"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// rawSendV5 sends one plain message of body to topic through endpoint
// itself (no route: the call goes where it is sent), with the extra
// metadata md, and returns the answer's status; nil when the call was
// refused PERMISSION_DENIED (any other gRPC failure fails the test).
func rawSendV5(t *testing.T, endpoint, topic, body string, md map[string]string) *v2.Status {
	t.Helper()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("grpc dial %s: %v", endpoint, err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv := []string{"x-mq-client-id", "raw-send@1@1@test", "x-mq-language", "GO"}
	for k, v := range md {
		kv = append(kv, k, v)
	}
	ctx = metadata.AppendToOutgoingContext(ctx, kv...)
	tag := "raw"
	resp, err := v2.NewMessagingServiceClient(conn).SendMessage(ctx, &v2.SendMessageRequest{Messages: []*v2.Message{{
		Topic: &v2.Resource{Name: topic}, Body: []byte(body),
		SystemProperties: &v2.SystemProperties{MessageId: "RAW-" + body, MessageType: v2.MessageType_NORMAL, Tag: &tag,
			BornTimestamp: timestamppb.Now(), BodyEncoding: v2.Encoding_IDENTITY}}}})
	if status.Code(err) == codes.PermissionDenied {
		return nil
	}
	if err != nil {
		t.Fatalf("SendMessage at %s: %v", endpoint, err)
	}
	return resp.GetStatus()
}

// metricSum is the sum of the samples of the metric name whose labels
// include every one of labels (`key="value"`) on the /metrics of the
// process at metrics.
func metricSum(t *testing.T, metrics, name string, labels ...string) float64 {
	t.Helper()
	resp, err := testHTTP.Get("http://" + metrics + "/metrics")
	if err != nil {
		t.Fatalf("metrics of %s: %v", metrics, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("metrics of %s: %v", metrics, err)
	}
	var n float64
next:
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		for _, l := range labels {
			if !strings.Contains(line, l) {
				continue next
			}
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		n += v
	}
	return n
}

// forwardedCalls is how many calls of method the replica whose /metrics
// is at metrics forwarded to its master and had answered OK.
func forwardedCalls(t *testing.T, metrics, method string) float64 {
	return metricSum(t, metrics, "wheelmq_grpc_forwarded_total", `method="`+method+`"`, `code="OK"`)
}
