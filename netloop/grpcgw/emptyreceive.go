package grpcgw

import (
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
)

// emptyReceive is the status of a receive that found nothing.
//
// RocketMQ's proxy answers MESSAGE_NOT_FOUND ("no new message"), and so does
// the gateway, with one exception: a push consumer whose long poll ran its
// full course gets OK with no messages. The Go v5 SDK (5.1.4,
// process_queue.go) counts a push consumer's receives in flight and does not
// count one down when it ends in MESSAGE_NOT_FOUND, so its GracefulStop waits
// out its request timeout plus its long polling timeout (34 s by default)
// whenever a queue was idle; on OK it counts the receive down and receives
// again at once, as it does after MESSAGE_NOT_FOUND. The Java SDK treats
// both answers alike. A poll cut short (the client's deadline, a poll time
// of zero) stays MESSAGE_NOT_FOUND, so a push consumer never spins on
// answers that come back at once.
func (s *session) emptyReceive(started time.Time, poll time.Duration, now time.Time) *v2.Status {
	s.mu.Lock()
	push := s.clientType == v2.ClientType_PUSH_CONSUMER
	s.mu.Unlock()
	if push && poll > 0 && now.Sub(started) >= poll {
		return okStatus()
	}
	return statusf(v2.Code_MESSAGE_NOT_FOUND, "no new message")
}
