package router

import (
	"testing"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/netloop"
)

// TestConnDefaultsMatch: the connection defaults GET_BROKER_CONFIG shows
// (broker) are the ones the event loops apply (netloop).
func TestConnDefaultsMatch(t *testing.T) {
	if broker.DefaultMaxConnOutput != netloop.DefaultMaxOutput || broker.DefaultSlowConnTimeout != netloop.DefaultStallTimeout {
		t.Fatalf("broker shows %d / %s, netloop applies %d / %s", broker.DefaultMaxConnOutput, broker.DefaultSlowConnTimeout,
			netloop.DefaultMaxOutput, netloop.DefaultStallTimeout)
	}
}
