package grpcgw

import (
	"testing"

	"github.com/wheelmq/wheelmq/actors/broker"
)

// Every status of the broker API has its own entry in the gRPC table.
func TestEveryStatusHasAGRPCCode(t *testing.T) {
	for _, st := range broker.Statuses() {
		if _, ok := grpcCodes[st]; !ok {
			t.Errorf("status %s has no gRPC code", st)
		}
	}
	if got := fromBroker(broker.Errorf(broker.TypeMismatch, "x")).GetCode(); got != grpcCodes[broker.TypeMismatch] {
		t.Errorf("fromBroker(TypeMismatch) = %v", got)
	}
}
