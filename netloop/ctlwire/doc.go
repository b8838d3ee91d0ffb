// Package ctlwire is the remoting codec of the replication controller
// (actors/controller): the controller codes (904, 1001-1013) of the name
// server's port decoded into the controller's typed requests, its Answer
// encoded back into RocketMQ's header fields and bodies, and the ACL rules
// of those codes (Permissions). Serve is the whole path: decode, call
// Controller.Handle, encode; the answer is sent from the controller's
// stage, never from the network event loop.
//
// The broker's side is here too: Dial opens the connection a controller
// member (actors/controller/member) heartbeats and proposes sync-state
// sets over, its calls typed as member.Conn declares them.
package ctlwire
