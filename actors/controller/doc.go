// Package controller is the replication controller embedded in the name
// server (issue 17, RocketMQ 5's controller mode, RIP-44): a hashicorp/raft
// group of the name servers that decides, per broker group (cluster +
// brokerName), the replica ids, the master, the master epoch and the
// sync-state set. The state machine (fsm.go) is pure and replicated; the
// liveness of brokers (heartbeat connections and leases, liveness.go) lives
// only on the raft leader, which turns a dead master into an ElectMaster
// command. Requests are typed (api.go: one request type per controller
// code, one Answer whose Code is a RocketMQ response code); they arrive on
// the name server's remoting port through its codec, netloop/ctlwire
// (decode, Handle, encode), and are answered asynchronously, never from the
// network event loop.
//
// Everything but raft itself runs in one supervised actors/stage stage,
// StageName ("controller", spawned in Config.System under
// actors/supervisor's policy, its wheelmq_actor_*{stage="controller"}
// metrics in Config.Stages): Handle and ConnClosed send it messages, the
// outcome of every raft apply comes back to it as a message (a goroutine
// per apply only waits on raft's future), and the lease scan is a
// Stage.NewTimer tick. Requests and apply outcomes are stage.Failable: a
// panic while handling one answers its request SYSTEM_ERROR, and the
// supervisor restarts the actor. A restarted actor rebuilds the liveness
// table empty, giving every broker a fresh lease as a leader change does;
// the replicated state is the raft FSM's and survives. hashicorp/raft runs
// its own goroutines. See docs/controller.md.
package controller
