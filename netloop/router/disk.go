package router

import "github.com/wheelmq/wheelmq/netloop/remoting"

// diskFull refuses a request that would write to the CommitLog while the
// disk is at or above the full ratio, as RocketMQ does: SERVICE_NOT_AVAILABLE
// (14) with its "disk is full" remark. The retention stage samples the disk;
// this only reads an atomic. Pulls and every other read go on.
func (r *Router) diskFull() *Refusal {
	d := r.p.Disk()
	if !d.Full() {
		return nil
	}
	return &Refusal{Code: remoting.ServiceNotAvailable, Remark: d.FullRemark()}
}
