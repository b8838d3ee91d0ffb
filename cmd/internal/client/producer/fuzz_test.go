package producer

import (
	"errors"
	"testing"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// FuzzParseSendResponse feeds send responses with arbitrary codes and
// fields: the parser must return a result or an error, never panic, and a
// result must carry the fields it was given.
func FuzzParseSendResponse(f *testing.F) {
	f.Add(int32(0), "7F0000010000A82300000000000000BC", "3", "42", "UNIQ", "DefaultRegion", "true")
	f.Add(int32(0), "", "3", "42", "", "", "")
	f.Add(int32(0), "id1,id2", "x", "42", "", "", "false")
	f.Add(int32(10), "id", "1", "-1", "", "r", "")
	f.Add(int32(2), "", "", "", "", "", "")
	f.Add(int32(0), "id", "99999999999", "1", "", "", "")
	f.Fuzz(func(t *testing.T, code int32, msgID, queueID, queueOffset, txID, region, trace string) {
		resp := &remoting.Command{Code: code, Flag: remoting.FlagResponse, ExtFields: map[string]string{
			"msgId": msgID, "queueId": queueID, "queueOffset": queueOffset, "transactionId": txID,
			"MSG_REGION": region, "TRACE_ON": trace,
		}}
		q := Queue{Topic: "T", Broker: "b", ID: 1}
		res, err := parseSendResponse(resp, q, "h:1", []string{"U1", "U2"})
		if err != nil {
			var be *BrokerError
			if !errors.As(err, &be) && !errors.Is(err, ErrBadResponse) {
				t.Fatalf("error of an unknown kind: %v", err)
			}
			return
		}
		if res.OffsetMsgID != msgID || res.MsgID != "U1,U2" || res.Queue.Topic != "T" || res.Queue.Broker != "b" ||
			res.TransactionID != txID || res.TraceOn != (trace != "false") {
			t.Fatalf("result %+v from fields %q %q %q %q %q", res, msgID, queueID, queueOffset, txID, trace)
		}
		if region != "" && res.RegionID != region || region == "" && res.RegionID != "DefaultRegion" {
			t.Fatalf("region %q from %q", res.RegionID, region)
		}
		if msgID == "" {
			t.Fatal("accepted a response without msgId")
		}
	})
}
