// Package broker is the broker's own API: one typed call for everything a
// client or an operator can ask of a broker, behind every front door.
//
// The front doors are codecs over it. netloop/router decodes a remoting
// frame into a typed request, calls the Broker and encodes the typed result
// into a remoting answer; netloop/grpcgw does the same from RocketMQ 5's
// protobuf messages, in process (no socket, no second signature, no
// remoting client); the console reads through it too. A rule (a limit, a
// message-type check, the longest timer delay, topic auto-creation, an ACL
// decision, a refusal) is written once, here, and every protocol gets the
// same answer.
//
// # Calls
//
// Every call takes the Caller (who asks: protocol, verified account, remote
// address, client id) and a typed request, and answers through a done
// callback with a typed result or an *Error. The callback runs on the
// goroutine of the stage that finished the work (or on the caller's, for a
// refusal found before any stage was asked); it must not block. Nothing in
// a call blocks: the work is handed to the supervised stages of
// actors/pipeline that own the state, so a codec on a gnet event loop may
// call the API directly.
//
// # Status
//
// Every refusal and failure is an *Error carrying one Status from the
// table in status.go. Each codec maps a Status to its own wire code in one
// place (router/status.go for remoting, grpcgw/status.go for gRPC); the
// remark is the text the client shows.
package broker
