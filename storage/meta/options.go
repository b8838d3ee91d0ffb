package meta

import "github.com/rs/zerolog"

// Option configures a Load function.
type Option func(*options)

type options struct {
	log zerolog.Logger
}

// WithLogger sets the logger that reports a fallback to a .bak file.
// The default discards everything.
func WithLogger(l zerolog.Logger) Option {
	return func(o *options) { o.log = l }
}

func buildOptions(opts []Option) options {
	o := options{log: zerolog.Nop()}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}
