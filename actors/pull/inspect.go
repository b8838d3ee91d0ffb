package pull

// Inspect runs a read-only walk over stored data for a request that needs
// many reads (the broker's listing of pending timers: the timer wheel's
// chains, then the CommitLog records they point at). Fn runs on a pull
// reader, which owns reads for requests, with the CommitLog's reader; it
// must bound its own work (a page, a budget) and not block on anything
// but the reads.
type Inspect struct {
	Fn func(read func(offset int64) (record []byte, err error))
	// Failed answers the request when the reader cannot run Fn (the stage
	// stopped).
	Failed func(err error)
}

// Fail implements stage.Failable.
func (m *Inspect) Fail(err error) { m.Failed(err) }

func (p *reader) inspect(m *Inspect) {
	m.Fn(func(off int64) ([]byte, error) {
		rec, _, err := p.opts.Store.CommitLog.Read(off)
		return rec, err
	})
}
