package router

// diskFull refuses a request that would write to the CommitLog while the
// disk is at or above the full ratio (the broker API's rule,
// broker.DiskFull, in remoting's codes).
func (r *Router) diskFull() *Refusal { return refusalOf(r.core.DiskFull()) }
