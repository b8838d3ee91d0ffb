package metalog

import (
	"maps"

	"github.com/wheelmq/wheelmq/actors/pop/mode"
	"github.com/wheelmq/wheelmq/storage/meta"
	"github.com/wheelmq/wheelmq/storage/metarec"
)

// currentModes is a copy of the POP engine's published request modes
// (empty without a table).
func (l *Log) currentModes() map[mode.Key]meta.RequestMode {
	if l.opts.Modes == nil {
		return map[mode.Key]meta.RequestMode{}
	}
	return maps.Clone(l.opts.Modes.Modes())
}

// modesChanged journals the request modes that differ from the last
// journaled or applied ones.
func (l *Log) modesChanged() {
	cur := l.currentModes()
	var puts []meta.RequestMode
	for k, m := range cur {
		if old, ok := l.modes[k]; !ok || old != m {
			puts = append(puts, m)
		}
	}
	l.modes = cur
	if !l.master || len(puts) == 0 {
		return
	}
	meta.SortRequestModes(puts)
	l.journalChunks(metarec.KindRequestModePut, len(puts), func(r *metarec.Record, i int) { r.Modes = append(r.Modes, puts[i]) })
}

// sortedModes lists modes by topic, then group.
func sortedModes(modes map[mode.Key]meta.RequestMode) []meta.RequestMode {
	out := make([]meta.RequestMode, 0, len(modes))
	for _, m := range modes {
		out = append(out, m)
	}
	meta.SortRequestModes(out)
	return out
}
