package stage

// Quiet reports which of stages have work: a message queued (mailbox or
// inbox), one being processed, or one finished while Quiet looked. An empty
// result means that at one moment during the call none of them had any,
// so that, when nothing outside these stages sends them messages (the
// network refuses requests, the stages that make work of their own are
// stopped), every request they were given has been handled and answered.
//
// It looks twice. A message handed from one stage to another is always
// counted somewhere (the receiver's pending count rises before the
// sender's message ends; see the middleware), but one look may see the
// receiver before the hand-off and the sender after it; the second look
// then sees the receiver busy, or its finished count moved. A stage's own
// tick that lands between the looks makes it report busy: call Quiet again.
func Quiet(stages []*Stage) []string {
	var busy []string
	finished := make([]uint64, len(stages))
	for i, s := range stages {
		if s.pending.Load() != 0 || s.active.Load() != 0 {
			busy = append(busy, s.name)
		}
		finished[i] = s.finished.Load()
	}
	if len(busy) > 0 {
		return busy
	}
	for i, s := range stages {
		if s.pending.Load() != 0 || s.active.Load() != 0 || s.finished.Load() != finished[i] {
			busy = append(busy, s.name)
		}
	}
	return busy
}
