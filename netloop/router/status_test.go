package router

import (
	"testing"

	"github.com/wheelmq/wheelmq/actors/broker"
)

// Every status of the broker API has its own entry in the remoting table.
func TestEveryStatusHasAWireCode(t *testing.T) {
	for _, st := range broker.Statuses() {
		if _, ok := wireCodes[st]; !ok {
			t.Errorf("status %s has no remoting code", st)
		}
	}
}
