package clients

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestParseCheckClientBody(t *testing.T) {
	// As the Java client's fastjson writes it: codeSet holds numbers.
	body := `{"clientId":"10.0.0.1@42","group":"G","namespace":"","subscriptionData":{"classFilterMode":false,` +
		`"codeSet":[],"expressionType":"SQL92","subString":"a > 5","subVersion":1700000000000,"tagsSet":[],"topic":"T"}}`
	b, err := ParseCheckClientBody([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	s := b.Subscription
	if b.ClientID != "10.0.0.1@42" || b.Group != "G" || s == nil || s.Topic != "T" || s.SubString != "a > 5" ||
		s.ExpressionType != "SQL92" || s.SubVersion != 1700000000000 {
		t.Errorf("parsed %+v / %+v", b, s)
	}
	tag, err := ParseCheckClientBody([]byte(`{"clientId":"c","group":"G","subscriptionData":{"codeSet":[97,98],"subString":"a||b","topic":"T"}}`))
	if err != nil || tag.Subscription.ExpressionType != "" {
		t.Errorf("numeric codeSet: %+v, %v", tag.Subscription, err)
	}
	if b, err := ParseCheckClientBody([]byte(`{"clientId":"c","group":"G"}`)); err != nil || b.Subscription != nil {
		t.Errorf("no subscriptionData: %+v, %v", b, err)
	}
	for _, bad := range []string{``, `[`, `{"subscriptionData":"x"}`} {
		if _, err := ParseCheckClientBody([]byte(bad)); err == nil {
			t.Errorf("ParseCheckClientBody(%q) accepted it", bad)
		}
	}
}

// FuzzParseCheckClientBody checks that any body decodes or fails cleanly.
func FuzzParseCheckClientBody(f *testing.F) {
	f.Add([]byte(`{"clientId":"c","group":"G","subscriptionData":{"expressionType":"SQL92","subString":"a > 5","subVersion":1,"topic":"T"}}`))
	f.Add([]byte(`{"subscriptionData":null}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		b, err := ParseCheckClientBody(body)
		if err != nil {
			return
		}
		// What decodes survives an encode/decode round trip unchanged.
		again, err := json.Marshal(b)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		b2, err := ParseCheckClientBody(again)
		if err != nil || !reflect.DeepEqual(b, b2) {
			t.Fatalf("round trip: %+v -> %s -> %+v, %v", b, again, b2, err)
		}
	})
}
