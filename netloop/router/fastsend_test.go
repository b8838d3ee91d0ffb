package router

import (
	"bytes"
	"maps"
	"strconv"
	"testing"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

func TestParseInt(t *testing.T) {
	for _, s := range []string{"0", "-0", "+7", "42", "-2147483648", "2147483647", "2147483648", "-2147483649",
		"9223372036854775807", "-9223372036854775808", "9223372036854775808", "99999999999999999999", "1_000",
		"0x10", " 1", "1 ", "-", "+", "007", "１"} {
		for _, bits := range []int{32, 64} {
			want, err := strconv.ParseInt(s, 10, bits)
			got, ok := parseInt([]byte(s), bits)
			if ok != (err == nil) || (ok && got != want) {
				t.Errorf("parseInt(%q, %d) = %d, %v; strconv says %d, %v", s, bits, got, ok, want, err)
			}
		}
	}
}

func FuzzParseInt(f *testing.F) {
	for _, s := range []string{"0", "-2147483648", "9223372036854775807", "+1", "1e3", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if s == "" {
			return // callers never pass an empty value
		}
		for _, bits := range []int{32, 64} {
			want, err := strconv.ParseInt(s, 10, bits)
			got, ok := parseInt([]byte(s), bits)
			if ok != (err == nil) || (ok && got != want) {
				t.Fatalf("parseInt(%q, %d) = %d, %v; strconv says %d, %v", s, bits, got, ok, want, err)
			}
		}
	})
}

func TestScanProperties(t *testing.T) {
	enc := func(kv ...string) []byte {
		var b []byte
		for i := 0; i < len(kv); i += 2 {
			b = append(b, kv[i]...)
			b = append(b, message.NameValueSeparator)
			b = append(b, kv[i+1]...)
			b = append(b, message.PropertySeparator)
		}
		return b
	}
	tests := []struct {
		name  string
		props []byte
		ok    bool
		uniq  string
	}{
		{"empty", nil, true, ""},
		{"plain", enc("TAGS", "a", "UNIQ_KEY", "U1", "WAIT", "true"), true, "U1"},
		{"no trailing separator", enc("UNIQ_KEY", "U1", "KEYS", "k")[:18], true, "U1"},
		{"last UNIQ_KEY wins", enc("UNIQ_KEY", "U1", "UNIQ_KEY", "U2"), true, "U2"},
		{"timer", enc("TIMER_DELIVER_MS", "1"), false, ""},
		{"delay level", enc("DELAY", "3"), false, ""},
		{"transaction", enc("TRAN_MSG", "true"), false, ""},
		{"already a timer message", enc("TIMER_OUT_MS", "5"), false, ""},
		{"empty value", enc("KEYS", ""), false, ""},
		{"empty key", enc("", "v"), false, ""},
		{"no separator", []byte("KEYS"), false, ""},
		{"two separators", []byte("K\x01v\x01w\x02"), false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at, n, ok := broker.ScanPlainProperties(tt.props)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if ok && string(tt.props[at:at+n]) != tt.uniq {
				t.Fatalf("uniq = %q, want %q", tt.props[at:at+n], tt.uniq)
			}
		})
	}
}

// FuzzScanProperties holds scanProperties to DecodeProperties: properties
// it accepts decode to the same pairs as they are, none of them a timer or
// transaction property, and the UNIQ_KEY it points at is the decoded one.
func FuzzScanProperties(f *testing.F) {
	f.Add([]byte("UNIQ_KEY\x01U1\x02WAIT\x01true\x02"))
	f.Add([]byte("DELAY\x013\x02"))
	f.Add([]byte("a\x01b\x01c\x02\x02"))
	f.Fuzz(func(t *testing.T, props []byte) {
		at, n, ok := broker.ScanPlainProperties(props)
		if !ok {
			return
		}
		decoded := message.DecodeProperties(props)
		for _, k := range []string{message.PropTranMsg, message.PropDelay, message.PropTimerDelaySec,
			message.PropTimerDelayMS, message.PropTimerDeliverMS, message.PropTimerDelUniqKey, message.PropTimerOutMS,
			message.PropReplyToClient} {
			if _, has := decoded[k]; has {
				t.Fatalf("accepted properties with %s: %q", k, props)
			}
		}
		if u, has := decoded[message.PropUniqKey]; has != (n > 0) || (has && u != string(props[at:at+n])) {
			t.Fatalf("uniq at %d+%d of %q, decoded %q %v", at, n, props, u, has)
		}
		// Re-encoding what was accepted changes nothing a parser sees.
		if again := message.DecodeProperties(message.EncodeProperties(decoded)); !maps.Equal(again, decoded) {
			t.Fatalf("accepted properties %q lose pairs when re-encoded: %v vs %v", props, decoded, again)
		}
	})
}

func TestPlainSendRead(t *testing.T) {
	v1 := map[string]string{"producerGroup": "g", "topic": "T", "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"queueId": "2", "sysFlag": "0", "bornTimestamp": "99", "flag": "7", "properties": "a\x01b\x02",
		"reconsumeTimes": "1", "maxReconsumeTimes": "16", "batch": "false"}
	v2 := map[string]string{"a": "g", "b": "T", "c": "TBW102", "d": "4", "e": "2", "f": "0", "g": "99", "h": "7",
		"i": "a\x01b\x02", "j": "1", "l": "16", "m": "false"}
	with := func(m map[string]string, k, v string) map[string]string {
		m = maps.Clone(m)
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name string
		code int32
		ext  map[string]string
		ok   bool
	}{
		{"v1", remoting.SendMessage, v1, true},
		{"v2", remoting.SendMessageV2, v2, true},
		{"v1 names on the v2 code", remoting.SendMessageV2, v1, true},
		{"no group", remoting.SendMessageV2, with(v2, "a", ""), false},
		{"no queue", remoting.SendMessageV2, with(v2, "e", ""), false},
		{"queue not a number", remoting.SendMessageV2, with(v2, "e", "x"), false},
		{"queue over 32 bits", remoting.SendMessageV2, with(v2, "e", "4294967296"), false},
		{"bad max reconsume", remoting.SendMessageV2, with(v2, "l", "many"), false},
		{"bad default queue nums", remoting.SendMessageV2, with(v2, "d", "x"), false},
		{"batch", remoting.SendMessageV2, with(v2, "m", "true"), false},
		{"no properties", remoting.SendMessageV2, with(v2, "i", ""), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := remoting.NewRequest(tt.code, tt.ext, []byte("body"))
			f, err := remoting.EncodeFrame(cmd)
			if err != nil {
				t.Fatal(err)
			}
			var v remoting.HeaderView
			if err := v.Parse(f[4:]); err != nil {
				t.Fatal(err)
			}
			var p plainSend
			if ok := p.read(&v); ok != tt.ok {
				t.Fatalf("read = %v, want %v", ok, tt.ok)
			}
			if !tt.ok {
				return
			}
			// Whatever the hot path reads, the general path reads the same.
			h, err := parseSendHeader(cmd)
			if err != nil {
				t.Fatalf("the general path refuses what the hot path takes: %v", err)
			}
			if string(p.topic) != h.topic || p.queueID != h.queueID || p.sysFlag != h.sysFlag ||
				p.bornTimestamp != h.bornTimestamp || p.flag != h.flag || !bytes.Equal(p.properties, []byte(h.properties)) ||
				p.reconsumeTimes != h.reconsumeTimes || h.batch {
				t.Fatalf("hot path read %+v, general path %+v", p, h)
			}
		})
	}
}
