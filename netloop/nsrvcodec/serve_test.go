package nsrvcodec

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// recordStage is a Stage that keeps what it is sent.
type recordStage struct{ sent []any }

func (s *recordStage) Send(msg any) { s.sent = append(s.sent, msg) }

// Serve: a header that does not decode is refused before the stage (and
// logged as the stage logs its refusals), a oneway one silently; a good
// request reaches the stage typed, with its connection, and its answer is
// encoded for the request it came from.
func TestServe(t *testing.T) {
	var logs bytes.Buffer
	log := zerolog.New(&logs)
	st := &recordStage{}
	var got []*remoting.Command
	reply := func(c *remoting.Command) { got = append(got, c) }

	bad := &remoting.Command{Code: remoting.UnregisterBroker, Opaque: 3,
		ExtFields: map[string]string{"clusterName": "c", "brokerName": "b", "brokerId": "-1", "brokerAddr": "h:1"}}
	Serve(st, bad, 7, &log, reply)
	if len(st.sent) != 0 || len(got) != 1 || got[0].Code != remoting.InvalidParameter || got[0].Opaque != 3 ||
		!strings.Contains(got[0].Remark, "brokerId -1 is negative") {
		t.Fatalf("refused header: sent %v, answered %+v", st.sent, got)
	}
	if !strings.Contains(logs.String(), `"message":"namesrv: request refused"`) ||
		!strings.Contains(logs.String(), `"brokerAddr":"h:1"`) {
		t.Errorf("refusal not logged: %s", logs.String())
	}

	oneway := routeReq("")
	oneway.Flag = remoting.FlagOneway
	Serve(st, oneway, 7, &log, reply)
	Serve(st, &remoting.Command{Code: 4999, Flag: remoting.FlagOneway}, 7, &log, reply)
	if len(st.sent) != 0 || len(got) != 1 {
		t.Fatalf("oneway refusals: sent %v, answered %d", st.sent, len(got))
	}

	Serve(st, routeReq("T"), 7, &log, reply)
	if len(st.sent) != 1 {
		t.Fatalf("sent %v", st.sent)
	}
	req, ok := st.sent[0].(*namesrv.Request)
	if !ok || req.Conn != 7 || req.Call != (namesrv.GetRoute{Topic: "T"}) || req.Reply == nil {
		t.Fatalf("request %+v", st.sent[0])
	}
	req.Reply(namesrv.Answer{Status: namesrv.TopicNotFound, Remark: "none"})
	if len(got) != 2 || got[1].Code != remoting.TopicNotExist || got[1].Opaque != 7 || got[1].Remark != "none" {
		t.Fatalf("answer %+v", got[len(got)-1])
	}

	oneway = routeReq("T")
	oneway.Flag = remoting.FlagOneway
	Serve(st, oneway, 7, &log, reply)
	if r := st.sent[1].(*namesrv.Request); r.Reply != nil {
		t.Error("a oneway request carries a Reply")
	}
}
