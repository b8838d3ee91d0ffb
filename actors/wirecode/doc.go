// Package wirecode holds RocketMQ's remoting request and response codes
// (RequestCode, ResponseCode and wheelmq's extensions), defined here once.
// The stages answer with them, the remoting codec (netloop/remoting,
// which re-exports them under the same names) puts them on the wire, and
// the gRPC gateway maps them to its statuses. cmd/internal/lint fails
// when another package declares a code of its own.
package wirecode
