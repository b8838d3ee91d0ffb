package txcheck

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/commitlog"
	"github.com/wheelmq/wheelmq/storage/corruption"
	"github.com/wheelmq/wheelmq/storage/message"
)

// TestScanPassesOverDamage runs the restart scan over a CommitLog with a
// damaged record: it goes on past the damage under skip and fails under
// stop (it used to fail always, retiring the stage).
func TestScanPassesOverDamage(t *testing.T) {
	for _, policy := range []corruption.Policy{corruption.PolicySkip, corruption.PolicyStop} {
		t.Run(policy.String(), func(t *testing.T) {
			st, err := storage.Open(t.TempDir(), storage.Options{OnCorruption: policy})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			var offs []int64
			for i := 0; i < 3; i++ {
				rec, err := (&message.Record{Topic: "T", QueueOffset: int64(i), BornHost: host, StoreHost: host,
					Body: []byte("body")}).Encode(nil)
				if err != nil {
					t.Fatal(err)
				}
				o, err := st.CommitLog.Append([][]byte{rec})
				if err != nil {
					t.Fatal(err)
				}
				offs = append(offs, o[0])
			}
			f, err := os.OpenFile(filepath.Join(st.CommitLog.Dir(), fmt.Sprintf("%020d", 0)), os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt([]byte{0xEE}, offs[1]+50); err != nil {
				t.Fatal(err)
			}
			_ = f.Close()
			s := &Stage{opts: Options{Store: st}}
			_, err = s.scan(0, st.CommitLog.MaxOffset())
			switch policy {
			case corruption.PolicySkip:
				if err != nil {
					t.Fatalf("scan under skip: %v", err)
				}
			case corruption.PolicyStop:
				if !errors.Is(err, commitlog.ErrCorrupt) {
					t.Fatalf("scan under stop: %v, want ErrCorrupt", err)
				}
			}
		})
	}
}
