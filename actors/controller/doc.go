// Package controller is the replication controller embedded in the name
// server (issue 17, RocketMQ 5's controller mode, RIP-44): a hashicorp/raft
// group of the name servers that decides, per broker group (cluster +
// brokerName), the replica ids, the master, the master epoch and the
// sync-state set. The state machine (fsm.go) is pure and replicated; the
// liveness of brokers (heartbeat connections and leases, liveness.go) lives
// only on the raft leader, which turns a dead master into an ElectMaster
// command. Requests arrive on the name server's remoting port (Handle) and
// are answered asynchronously from the controller's own goroutine, never
// from the network event loop. See docs/controller.md.
package controller
