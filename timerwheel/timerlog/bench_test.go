package timerlog

import "testing"

// BenchmarkAppend appends batches of 100 records (default segment size, so
// segments cycle every ~47k records) without fsync; BenchmarkAppendSync
// fsyncs after every 10 batches, as the store's flusher does between adds.
// One op is one batch; records/s is reported.
func BenchmarkAppend(b *testing.B)     { benchAppend(b, 0) }
func BenchmarkAppendSync(b *testing.B) { benchAppend(b, 10) }

func benchAppend(b *testing.B, syncEvery int) {
	const batch = 100
	l, _, err := Open(Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	recs := make([]Record, batch)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		first := l.Last() + 1
		for k := range recs {
			seq := first + uint64(k)
			recs[k] = Record{Seq: seq, Kind: KindNormal, Flags: FlagCommit, DeliverMs: int64(seq), EffMs: int64(seq),
				Slot: int64(seq), CLOffset: int64(seq) * 100, CQOffset: int64(seq), Size: 100}
		}
		if err := l.Append(recs); err != nil {
			b.Fatal(err)
		}
		if syncEvery > 0 && i%syncEvery == syncEvery-1 {
			if err := l.SyncTo(l.Last()); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "records/s")
}
