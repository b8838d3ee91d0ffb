package index

import (
	"fmt"
	"testing"
)

// BenchmarkIndexing adds records with a UNIQ_KEY and one KEYS value each,
// flushing every 4096 records (as the index stage does per batch) and
// syncing every 64 batches, into real files with the default layout.
func BenchmarkIndexing(b *testing.B) {
	ix, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	uniq := make([]string, 4096)
	keys := make([]string, 4096)
	for i := range uniq {
		uniq[i] = fmt.Sprintf("7F0000010A2B18B4AAC25E3B6E8A%04X", i)
		keys[i] = fmt.Sprintf("order-%d", i)
	}
	b.ResetTimer()
	off := int64(0)
	batches := 0
	for i := 0; i < b.N; i++ {
		j := i % 4096
		if err := ix.Add("orders", uniq[j], off, 1_700_000_000_000+int64(i)); err != nil {
			b.Fatal(err)
		}
		if err := ix.Add("orders", keys[j], off, 1_700_000_000_000+int64(i)); err != nil {
			b.Fatal(err)
		}
		off += 250
		if j == 4095 || i == b.N-1 {
			if err := ix.Flush(off); err != nil {
				b.Fatal(err)
			}
			if batches++; batches%64 == 0 {
				if err := ix.Sync(); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	if err := ix.Sync(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkLookup looks one key up among a million entries.
func BenchmarkLookup(b *testing.B) {
	ix, err := Open(b.TempDir(), Options{Slots: 1 << 16, MaxEntries: 1 << 18})
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	for i := 0; i < 1<<20; i++ {
		if err := ix.Add("T", fmt.Sprintf("k%d", i), int64(i)*100, int64(i)); err != nil {
			b.Fatal(err)
		}
		if i%4096 == 4095 {
			if err := ix.Flush(int64(i+1) * 100); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		k := (i * 7919) % (1 << 20)
		hits, err := ix.Lookup("T", fmt.Sprintf("k%d", k), 0, 1<<62, 32)
		if err != nil || len(hits) != 1 {
			b.Fatalf("k%d: %v %v", k, hits, err)
		}
	}
}
