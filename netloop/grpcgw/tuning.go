package grpcgw

// The gRPC server's transport tuning for many small calls on few
// connections (the v5 SDKs multiplex every call of a client on one
// HTTP/2 connection per endpoint).

import (
	"runtime"

	"google.golang.org/grpc"
)

// Transport sizes.
const (
	// flowWindow is each stream's and each connection's HTTP/2 receive
	// window: a client with hundreds of sends in flight is not held back by
	// the 64 KiB default while the BDP estimator grows it, and the server
	// sends a WINDOW_UPDATE every 256 KiB received instead of every 16 KiB.
	flowWindow = 1 << 20
)

// serverTuning returns the server options that cut the per-call cost:
//   - stream workers: a call runs on one of a fixed set of goroutines
//     whose stacks have already grown, instead of a new goroutine per
//     call (grpc-go starts a new one only when every worker is busy, e.g.
//     with long-polling receives);
//   - flow-control windows of flowWindow (which also turns off the BDP
//     estimator's pings).
func serverTuning() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.NumStreamWorkers(uint32(max(runtime.GOMAXPROCS(0), 4))),
		grpc.InitialWindowSize(flowWindow),
		grpc.InitialConnWindowSize(flowWindow),
	}
}
