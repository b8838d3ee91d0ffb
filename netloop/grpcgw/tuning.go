package grpcgw

// The gRPC server's transport tuning for many small calls on few
// connections (the v5 SDKs multiplex every call of a client on one
// HTTP/2 connection per endpoint).

import (
	"runtime"

	"google.golang.org/grpc"
)

// serverTuning returns the server options that cut the per-call cost:
// stream workers, so that a call runs on one of a fixed set of goroutines
// whose stacks have already grown instead of a new goroutine per call
// (grpc-go starts a new one only when every worker is busy, e.g. with
// long-polling receives or sends waiting for the writer).
//
// The HTTP/2 flow-control windows stay grpc-go's: its BDP estimator grows
// them from 64 KiB up to 16 MiB as a connection needs. A fixed window
// turns the estimator off and caps a distant client's throughput at one
// window per round trip (1 MiB at 50 ms: 20 MB/s), a cost for large
// messages that small ones do not repay.
func serverTuning() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.NumStreamWorkers(uint32(max(runtime.GOMAXPROCS(0), 4))),
	}
}
