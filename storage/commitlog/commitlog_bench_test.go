package commitlog

import (
	"fmt"
	"testing"
)

// benchAppend appends batches of 1 KiB records, optionally fsyncing after
// every batch (the group-commit pattern: one Sync per batch).
func benchAppend(b *testing.B, batch int, sync bool) {
	c := mustOpen(b, b.TempDir(), Options{SegmentSize: 64 << 20})
	recs := makeRecords(0, repeat(1024, batch)...)
	b.SetBytes(int64(1024 * batch))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Append(recs); err != nil {
			b.Fatal(err)
		}
		if sync {
			if err := c.Sync(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkAppend(b *testing.B) {
	for _, batch := range []int{1, 32} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) { benchAppend(b, batch, false) })
	}
}

func BenchmarkAppendSync(b *testing.B) {
	for _, batch := range []int{1, 32} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) { benchAppend(b, batch, true) })
	}
}

// BenchmarkRead reads 1 KiB records sequentially with Read (the dispatcher's
// access pattern) and by offset with ReadAt (the puller's).
func BenchmarkRead(b *testing.B) {
	c := mustOpen(b, b.TempDir(), Options{SegmentSize: 64 << 20})
	offs, err := c.Append(makeRecords(0, repeat(1024, 4096)...))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Read", func(b *testing.B) {
		b.SetBytes(1024)
		b.ReportAllocs()
		off := int64(0)
		for i := 0; i < b.N; i++ {
			_, next, err := c.Read(off)
			if err != nil {
				off, next = 0, 0
			}
			off = next
		}
	})
	b.Run("ReadAt", func(b *testing.B) {
		b.SetBytes(1024)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := c.ReadAt(offs[i%len(offs)], 1024); err != nil {
				b.Fatal(err)
			}
		}
	})
}
