package netloop

import "github.com/rs/zerolog"

// gnetLogger adapts zerolog to gnet's logging.Logger interface. gnet only
// offers printf-style calls, so its messages arrive formatted in the
// message field (formatting is skipped when the level is disabled); the
// fields of the zerolog logger (server name, component) are kept. Fatalf
// is logged at fatal level without exiting: stopping the process is not
// gnet's decision.
type gnetLogger struct {
	log zerolog.Logger
}

// Debugf implements logging.Logger.
func (l gnetLogger) Debugf(format string, args ...any) { l.log.Debug().Msgf(format, args...) }

// Infof implements logging.Logger.
func (l gnetLogger) Infof(format string, args ...any) { l.log.Info().Msgf(format, args...) }

// Warnf implements logging.Logger.
func (l gnetLogger) Warnf(format string, args ...any) { l.log.Warn().Msgf(format, args...) }

// Errorf implements logging.Logger.
func (l gnetLogger) Errorf(format string, args ...any) { l.log.Error().Msgf(format, args...) }

// Fatalf implements logging.Logger.
func (l gnetLogger) Fatalf(format string, args ...any) {
	l.log.WithLevel(zerolog.FatalLevel).Msgf(format, args...)
}
