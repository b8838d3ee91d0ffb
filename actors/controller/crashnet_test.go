package controller

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// errPowerCut is what a node whose power was cut answers its own RPCs.
var errPowerCut = errors.New("power cut")

// cuttableTransport wraps one node's raft.InmemTransport so that a
// simulated power cut is instantaneous: once cut, the node sends no RPC
// and no response leaves it, so nothing it writes after the crash image
// is taken can be acknowledged to the rest of the group. Incoming RPCs
// are relayed to raft by one goroutine, and each response by one more;
// close stops them and waits.
type cuttableTransport struct {
	*raft.InmemTransport
	cut  atomic.Bool
	out  chan raft.RPC
	stop chan struct{}
	wg   sync.WaitGroup
}

func newCuttableTransport(addr raft.ServerAddress) *cuttableTransport {
	_, inner := raft.NewInmemTransport(addr)
	t := &cuttableTransport{InmemTransport: inner, out: make(chan raft.RPC), stop: make(chan struct{})}
	t.wg.Add(1)
	go t.relay()
	return t
}

func (t *cuttableTransport) relay() {
	defer t.wg.Done()
	for {
		var rpc raft.RPC
		select {
		case rpc = <-t.InmemTransport.Consumer():
		case <-t.stop:
			return
		}
		if t.cut.Load() {
			continue // dropped: the sender times out
		}
		orig, mine := rpc.RespChan, make(chan raft.RPCResponse, 1)
		rpc.RespChan = mine
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			select {
			case resp := <-mine:
				if !t.cut.Load() {
					orig <- resp // buffered by the sender
				}
			case <-t.stop:
			}
		}()
		select {
		case t.out <- rpc:
		case <-t.stop:
			return
		}
	}
}

// Consumer implements raft.Transport.
func (t *cuttableTransport) Consumer() <-chan raft.RPC { return t.out }

// AppendEntriesPipeline implements raft.Transport: no pipelining, so that
// every send passes the cut check.
func (t *cuttableTransport) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}

// AppendEntries implements raft.Transport.
func (t *cuttableTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	if t.cut.Load() {
		return errPowerCut
	}
	return t.InmemTransport.AppendEntries(id, target, args, resp)
}

// RequestVote implements raft.Transport.
func (t *cuttableTransport) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	if t.cut.Load() {
		return errPowerCut
	}
	return t.InmemTransport.RequestVote(id, target, args, resp)
}

// RequestPreVote implements raft.WithPreVote.
func (t *cuttableTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	if t.cut.Load() {
		return errPowerCut
	}
	return t.InmemTransport.RequestPreVote(id, target, args, resp)
}

// InstallSnapshot implements raft.Transport.
func (t *cuttableTransport) InstallSnapshot(id raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	if t.cut.Load() {
		return errPowerCut
	}
	return t.InmemTransport.InstallSnapshot(id, target, args, resp, data)
}

// TimeoutNow implements raft.Transport.
func (t *cuttableTransport) TimeoutNow(id raft.ServerID, target raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	if t.cut.Load() {
		return errPowerCut
	}
	return t.InmemTransport.TimeoutNow(id, target, args, resp)
}

// close disconnects the transport and stops its goroutines.
func (t *cuttableTransport) close() {
	t.cut.Store(true)
	_ = t.InmemTransport.Close()
	close(t.stop)
	t.wg.Wait()
}
