package router

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

func TestParseSendHeader(t *testing.T) {
	v1 := map[string]string{"producerGroup": "g", "topic": "T", "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"queueId": "2", "sysFlag": "1", "bornTimestamp": "99", "flag": "7", "properties": "a\x01b\x02",
		"reconsumeTimes": "1", "maxReconsumeTimes": "16", "batch": "false"}
	v2 := map[string]string{"a": "g", "b": "T", "c": "TBW102", "d": "4", "e": "2", "f": "1", "g": "99", "h": "7",
		"i": "a\x01b\x02", "j": "1", "l": "16", "m": "true"}
	for _, c := range []struct {
		name  string
		code  int32
		ext   map[string]string
		batch bool
	}{
		{"v1", remoting.SendMessage, v1, false},
		{"v2 short keys", remoting.SendMessageV2, v2, true},
		{"batch code", remoting.SendBatchMessage, v2, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, err := parseSendHeader(remoting.NewRequest(c.code, c.ext, nil))
			if err != nil {
				t.Fatal(err)
			}
			if h.producerGroup != "g" || h.topic != "T" || h.defaultTopic != "TBW102" || h.defaultQueueNums != 4 ||
				h.queueID != 2 || h.sysFlag != 1 || h.bornTimestamp != 99 || h.flag != 7 || h.properties != "a\x01b\x02" ||
				h.reconsumeTimes != 1 || !h.hasMaxReconsume || h.maxReconsumeTimes != 16 || h.batch != c.batch {
				t.Fatalf("parsed %+v", h)
			}
		})
	}
	_, err := parseSendHeader(remoting.NewRequest(remoting.SendMessage, map[string]string{"topic": "T", "queueId": "x"}, nil))
	if err == nil {
		t.Fatal("missing and malformed fields accepted")
	}
	for _, want := range []string{"producerGroup", "queueId", "sysFlag", "bornTimestamp", "flag"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

func TestSendFailure(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		wantCode   int32
		wantRemark string
	}{
		{"disk full", fmt.Errorf("commitlog append: write seg: %w", syscall.ENOSPC), remoting.ServiceNotAvailable, "[DISK_FULL]"},
		{"quota", &os.PathError{Op: "open", Path: "x", Err: syscall.EDQUOT}, remoting.ServiceNotAvailable, "disk is full"},
		{"failed log", errors.New("commitlog: failed, reopen to recover"), remoting.SystemError, "reopen to recover"},
		{"io error", fmt.Errorf("write: %w", syscall.EIO), remoting.SystemError, "input/output error"},
	}
	for _, tt := range tests {
		code, remark := sendFailure(tt.err)
		if code != tt.wantCode || !strings.Contains(remark, tt.wantRemark) {
			t.Errorf("%s: %d %q, want %d containing %q", tt.name, code, remark, tt.wantCode, tt.wantRemark)
		}
	}
}
