package nsrvcodec

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// TestGRPCEndpointInRoutes registers members with and without a gRPC
// endpoint: the route carries grpcEndpoints for those that have one (the
// Go client's parsing still reads brokerAddrs right), none at all when no
// member has one, and a malformed endpoint is refused.
func TestGRPCEndpointInRoutes(t *testing.T) {
	r := namesrv.NewRegistry()
	a0 := master("broker-a", "10.0.0.1:10911")
	a0.GRPCEndpoint = "10.0.0.1:8081"
	a1 := slave("broker-a", "10.0.0.2:10911", 1)
	a1.GRPCEndpoint = "10.0.0.2:8081"
	mustRegister(t, r, a0, t0, topic("T", 2))
	mustRegister(t, r, a1, t0, topic("T", 2))
	mustRegister(t, r, master("broker-b", "10.0.0.3:10911"), t0, topic("T", 2), topic("U", 1))

	resp := handle(r, routeReq("T"), t0)
	if resp.Code != remoting.Success {
		t.Fatalf("route: %d %s", resp.Code, resp.Remark)
	}
	rd, err := namesrv.ParseRouteData(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if len(rd.BrokerDatas) != 2 {
		t.Fatalf("broker datas %+v", rd.BrokerDatas)
	}
	if want := map[int64]string{0: "10.0.0.1:8081", 1: "10.0.0.2:8081"}; !reflect.DeepEqual(rd.BrokerDatas[0].GRPCEndpoints, want) {
		t.Errorf("broker-a endpoints %v, want %v", rd.BrokerDatas[0].GRPCEndpoints, want)
	}
	if rd.BrokerDatas[1].GRPCEndpoints != nil {
		t.Errorf("broker-b registered no endpoint, route has %v", rd.BrokerDatas[1].GRPCEndpoints)
	}
	cd, err := clientDecode(resp.Body)
	if err != nil || cd.BrokerDataList[0].BrokerAddresses[0] != "10.0.0.1:10911" || cd.BrokerDataList[0].BrokerAddresses[1] != "10.0.0.2:10911" {
		t.Fatalf("the Go client's parse of a route with endpoints: %+v %v", cd, err)
	}
	if u := handle(r, routeReq("U"), t0); bytes.Contains(u.Body, []byte("grpcEndpoints")) {
		t.Errorf("a route with no endpoint names the field: %s", u.Body)
	}

	bad := master("broker-c", "10.0.0.4:10911")
	bad.GRPCEndpoint = "10.0.0.4:8081,evil:1"
	if _, err := NewRegisterRequest(bad, nil, namesrv.DataVersion{}); !errors.Is(err, namesrv.ErrInvalidValue) {
		t.Errorf("endpoint with a comma: %v", err)
	}
	req, err := NewRegisterRequest(master("broker-c", "10.0.0.4:10911"), nil, namesrv.DataVersion{})
	if err != nil {
		t.Fatal(err)
	}
	req.ExtFields[fieldGRPCEndpoint] = "a b:1"
	if resp := handle(r, req, t0); resp.Code != remoting.InvalidParameter {
		t.Errorf("register with a blank in the endpoint: %d %s", resp.Code, resp.Remark)
	}
}
