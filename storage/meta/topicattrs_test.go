package meta

import (
	"errors"
	"maps"
	"strings"
	"testing"
)

func TestParseAttributes(t *testing.T) {
	tests := []struct {
		in      string
		want    map[string]string
		wantErr string // "" : no error
	}{
		{"", map[string]string{}, ""},
		{"+message.type=FIFO", map[string]string{"+message.type": "FIFO"}, ""},
		{"+message.type=FIFO,+queue.type=SimpleCQ,-reserve.time",
			map[string]string{"+message.type": "FIFO", "+queue.type": "SimpleCQ", "-reserve.time": ""}, ""},
		{"message.type=FIFO", nil, "add/alter attribute format is wrong"},
		{"-message.type=FIFO", nil, "add/alter attribute format is wrong"},
		{"+message.type", nil, "delete attribute format is wrong"},
		{"+message.type=", nil, "bad value"},
		{"+a=b=c", nil, "bad value"},
		{"+=x", nil, "kv string format wrong"},
		{"-", nil, "kv string format wrong"},
		{"+mess-age=x", nil, "kv string format wrong"},
		{"+message.type=FIFO,+message.type=NORMAL", nil, "key duplication"},
		{"+message.type=FIFO,", nil, "delete attribute format is wrong"},
		{strings.Repeat("x", maxAttrText+1), nil, "longer than"},
	}
	for _, tt := range tests {
		got, err := ParseAttributes(tt.in)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("ParseAttributes(%q): %v", tt.in, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrAttribute)):
			t.Errorf("ParseAttributes(%q) = %v, want an ErrAttribute with %q", tt.in, err, tt.wantErr)
		case tt.wantErr == "" && !maps.Equal(got, tt.want):
			t.Errorf("ParseAttributes(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestAlterAttributes(t *testing.T) {
	fifo := map[string]string{"message.type": "FIFO"}
	tests := []struct {
		name    string
		create  bool
		current map[string]string
		mods    string
		want    map[string]string
		wantErr string
	}{
		{"create typed", true, nil, "+message.type=FIFO", fifo, ""},
		{"create all kinds", true, nil, "+message.type=DELAY,+queue.type=BatchCQ,+cleanup.policy=COMPACTION,+reserve.time=3600",
			map[string]string{"message.type": "DELAY", "queue.type": "BatchCQ", "cleanup.policy": "COMPACTION", "reserve.time": "3600"}, ""},
		{"create without attributes", true, nil, "", nil, ""},
		{"update keeps", false, fifo, "", fifo, ""},
		{"update changes type", false, fifo, "+message.type=TRANSACTION", map[string]string{"message.type": "TRANSACTION"}, ""},
		{"update deletes type", false, fifo, "-message.type", nil, ""},
		{"create refuses delete", true, nil, "-message.type", nil, "only add attribute is supported while creating topic"},
		{"delete missing", false, nil, "-message.type", nil, "attempt to delete a nonexistent key"},
		{"unknown key", true, nil, "+message.kind=FIFO", nil, "unsupported key: message.kind"},
		{"unknown value", true, nil, "+message.type=ORDERED", nil, "value is not in set"},
		{"lower case value", true, nil, "+message.type=fifo", nil, "value is not in set"},
		{"unchangeable", false, map[string]string{"queue.type": "SimpleCQ"}, "+queue.type=BatchCQ", nil, "unchangeable attribute"},
		{"reserve time range", true, nil, "+reserve.time=-2", nil, "not in range"},
		{"reserve time number", true, nil, "+reserve.time=soon", nil, "not in range"},
		{"add and delete one key", false, fifo, "+message.type=NORMAL,-message.type", nil, "alter duplication key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mods, err := ParseAttributes(tt.mods)
			if err != nil {
				t.Fatal(err)
			}
			before := maps.Clone(tt.current)
			got, err := AlterAttributes(tt.create, tt.current, mods)
			if tt.wantErr != "" {
				if err == nil || !errors.Is(err, ErrAttribute) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("AlterAttributes = %v, %v; want an ErrAttribute with %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || !maps.Equal(got, tt.want) || (tt.want == nil) != (got == nil) {
				t.Fatalf("AlterAttributes = %v, %v; want %v", got, err, tt.want)
			}
			if !maps.Equal(tt.current, before) {
				t.Fatalf("current changed to %v", tt.current)
			}
		})
	}
}

func TestMessageTypeCheck(t *testing.T) {
	tests := []struct {
		name  string
		props map[string]string
		typ   MessageType
	}{
		{"normal", map[string]string{"TAGS": "a", "KEYS": "k"}, MessageTypeNormal},
		{"fifo", map[string]string{"__SHARDINGKEY": "g1"}, MessageTypeFIFO},
		{"delay level", map[string]string{"DELAY": "3"}, MessageTypeDelay},
		{"timer deliver", map[string]string{"TIMER_DELIVER_MS": "1700000000000"}, MessageTypeDelay},
		{"timer delay sec", map[string]string{"TIMER_DELAY_SEC": "10"}, MessageTypeDelay},
		{"timer delay ms", map[string]string{"TIMER_DELAY_MS": "10"}, MessageTypeDelay},
		{"transaction", map[string]string{"TRAN_MSG": "true"}, MessageTypeTransaction},
		{"transaction wins over group and delay", map[string]string{"TRAN_MSG": "true", "__SHARDINGKEY": "g", "DELAY": "1"}, MessageTypeTransaction},
		{"delay wins over group", map[string]string{"__SHARDINGKEY": "g", "DELAY": "1"}, MessageTypeDelay},
		{"TRAN_MSG false", map[string]string{"TRAN_MSG": "false"}, MessageTypeNormal},
		{"priority", map[string]string{"PRIORITY": "1"}, MessageTypePriority},
	}
	for _, tt := range tests {
		if got := MessageTypeOf(tt.props); got != tt.typ {
			t.Errorf("%s: MessageTypeOf = %s, want %s", tt.name, got, tt.typ)
		}
	}
	all := []MessageType{MessageTypeNormal, MessageTypeFIFO, MessageTypeDelay, MessageTypeTransaction, MessageTypePriority}
	for _, topic := range []MessageType{"", MessageTypeMixed, MessageTypeNormal, MessageTypeFIFO, MessageTypeDelay, MessageTypeTransaction} {
		for _, m := range all {
			want := topic == "" || topic == MessageTypeMixed || topic == m
			if got := topic.Accepts(m); got != want {
				t.Errorf("topic %q Accepts(%s) = %v, want %v", topic, m, got, want)
			}
			remark := CheckMessageType("T", topic, m)
			if (remark == "") != want || (!want && !strings.Contains(remark, "the expected type is "+string(topic)+", but actual type is "+string(m))) {
				t.Errorf("CheckMessageType(%q, %s) = %q", topic, m, remark)
			}
		}
		if topic.Accepts(MessageTypeUnspecified) {
			t.Errorf("topic %q accepts UNSPECIFIED", topic)
		}
	}
	if got := (TopicConfig{Attributes: map[string]string{AttrMessageType: "FIFO"}}).TopicMessageType(); got != MessageTypeFIFO {
		t.Errorf("TopicMessageType = %q", got)
	}
}

// FuzzParseAttributes checks that ParseAttributes never panics, refuses
// with ErrAttribute only, and that what it accepts survives
// FormatModifications and AlterAttributes without panicking.
func FuzzParseAttributes(f *testing.F) {
	for _, s := range []string{"", "+message.type=FIFO", "+message.type=FIFO,+queue.type=SimpleCQ,-reserve.time",
		"-x", "+=", ",", "+a=b=c", "+reserve.time=9223372036854775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		mods, err := ParseAttributes(s)
		if err != nil {
			if !errors.Is(err, ErrAttribute) {
				t.Fatalf("error %v is not an ErrAttribute", err)
			}
			return
		}
		again, err := ParseAttributes(FormatModifications(mods))
		if err != nil || !maps.Equal(again, mods) {
			t.Fatalf("round trip of %q: %v, %v", s, again, err)
		}
		for _, create := range []bool{true, false} {
			got, err := AlterAttributes(create, map[string]string{"message.type": "FIFO"}, mods)
			if err != nil && !errors.Is(err, ErrAttribute) {
				t.Fatalf("AlterAttributes error %v is not an ErrAttribute", err)
			}
			for k, v := range got {
				if strings.HasPrefix(k, "+") || strings.HasPrefix(k, "-") || topicAttrs[k].verify == nil || topicAttrs[k].verify(v) != nil {
					t.Fatalf("AlterAttributes(%q) kept %q=%q", s, k, v)
				}
			}
		}
	})
}
