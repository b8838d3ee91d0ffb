package broker

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/wheelmq/wheelmq/actors/groups"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage/meta"
)

func TestDeadLetter(t *testing.T) {
	var gv groups.View
	h := meta.NewSubscriptionGroupConfig("H")
	h.RetryMaxTimes = 2
	gv.Init(map[string]meta.SubscriptionGroupConfig{"G": meta.NewSubscriptionGroupConfig("G"), "H": h}, meta.DataVersion{})
	for _, c := range []struct {
		req  SendRequest
		want string
	}{
		{SendRequest{Topic: "%RETRY%G", ReconsumeTimes: 17, MaxReconsumeTimes: 16, HasMaxReconsume: true}, "%DLQ%G"},
		{SendRequest{Topic: "%RETRY%G", ReconsumeTimes: 16, MaxReconsumeTimes: 16, HasMaxReconsume: true}, ""},
		{SendRequest{Topic: "%RETRY%H", ReconsumeTimes: 3, MaxReconsumeTimes: 16, HasMaxReconsume: true}, ""}, // the request wins
		{SendRequest{Topic: "%RETRY%G", ReconsumeTimes: 30}, "%DLQ%G"},                                        // the group's retryMaxTimes (16)
		{SendRequest{Topic: "%RETRY%G", ReconsumeTimes: 16}, ""},
		{SendRequest{Topic: "%RETRY%H", ReconsumeTimes: 3}, "%DLQ%H"},
		{SendRequest{Topic: "%RETRY%unknown", ReconsumeTimes: 30}, ""},
		{SendRequest{Topic: "orders", ReconsumeTimes: 30, MaxReconsumeTimes: 1, HasMaxReconsume: true}, ""},
	} {
		got, ok := deadLetter(&c.req, gv.Get)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("deadLetter(%+v) = %q %v, want %q", c.req, got, ok, c.want)
		}
	}
}

func TestSendFailureStatus(t *testing.T) {
	for _, tt := range []struct {
		name   string
		err    error
		want   Status
		remark string
	}{
		{"disk full", fmt.Errorf("commitlog append: write seg: %w", syscall.ENOSPC), Unavailable, "[DISK_FULL]"},
		{"quota", &os.PathError{Op: "open", Path: "x", Err: syscall.EDQUOT}, Unavailable, "disk is full"},
		{"not master", fmt.Errorf("append: %w", writer.ErrNotMaster), NotMaster, "[NOT_MASTER]"},
		{"isr", writer.ErrInSyncReplicas, ReplicasNotEnough, "in-sync replicas not enough"},
		{"unconfirmed", writer.ErrNotConfirmed, ReplicaTimeout, "[FLUSH_SLAVE_TIMEOUT]"},
		{"io error", fmt.Errorf("write: %w", syscall.EIO), Internal, "input/output error"},
		{"other", errors.New("commitlog: failed, reopen to recover"), Internal, "reopen to recover"},
	} {
		got := SendFailure(tt.err)
		if got.Status != tt.want || !strings.Contains(got.Remark, tt.remark) || !errors.Is(got, tt.err) {
			t.Errorf("%s: %v, want %s containing %q", tt.name, got, tt.want, tt.remark)
		}
	}
}

func TestPickQueueKeepsGroups(t *testing.T) {
	var rr atomic.Uint32
	a, b := pickQueue(8, "order-1", &rr), pickQueue(8, "order-1", &rr)
	if a != b || a < 0 || a >= 8 {
		t.Fatalf("group queue %d then %d", a, b)
	}
	seen := map[int32]bool{}
	for range 3 {
		seen[pickQueue(3, "", &rr)] = true
	}
	if len(seen) != 3 {
		t.Fatalf("three sends used queues %v of 3: want round robin", seen)
	}
	if q := pickQueue(0, "x", &rr); q != 0 {
		t.Fatalf("queue %d of none", q)
	}
}
