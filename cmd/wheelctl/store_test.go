package main

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/message"
)

// runStore runs "wheelctl store ARGS" with the store command registered as
// newRoot's comment says.
func runStore(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	root := newRoot(nil, &stdout, &stderr)
	root.AddCommand(newStoreCmd(&globals{stdout: &stdout, stderr: &stderr}))
	root.SetArgs(append([]string{"store"}, args...))
	cmd, err := root.ExecuteContextC(context.Background())
	code := exitCode(&stderr, cmd, err)
	return stdout.String() + stderr.String(), code
}

// TestStoreVerifyAndDump writes a small store, then verifies and dumps it,
// clean and with a damaged record.
func TestStoreVerifyAndDump(t *testing.T) {
	dir := t.TempDir()
	st, err := storage.Open(dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	host := netip.MustParseAddrPort("10.0.0.1:10911")
	var offs []int64
	for i := 0; i < 3; i++ {
		rec, err := (&message.Record{Topic: "orders", QueueOffset: int64(i), BornHost: host, StoreHost: host,
			Body: []byte(fmt.Sprintf("body %d", i))}).Encode(nil)
		if err != nil {
			t.Fatal(err)
		}
		o, err := st.CommitLog.Append([][]byte{rec})
		if err != nil {
			t.Fatal(err)
		}
		offs = append(offs, o[0])
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if out, code := runStore(t, "verify", dir); code != 0 || !strings.Contains(out, "OK: 0 damaged") {
		t.Fatalf("clean store: exit %d\n%s", code, out)
	}
	if out, code := runStore(t, "dump", dir, "--offset", fmt.Sprint(offs[1]), "--count", "2"); code != 0 ||
		!strings.Contains(out, `"body 1"`) || !strings.Contains(out, `"body 2"`) || !strings.Contains(out, `"orders"`) {
		t.Fatalf("dump: exit %d\n%s", code, out)
	}
	seg := filepath.Join(dir, "commitlog", fmt.Sprintf("%020d", 0))
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	data[offs[1]+40] ^= 0x11
	if err := os.WriteFile(seg, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := runStore(t, "verify", dir)
	if want := fmt.Sprintf("DAMAGE  %s at byte %d", seg, offs[1]); code != 1 || !strings.Contains(out, want) {
		t.Fatalf("damaged store: exit %d, want 1 and %q\n%s", code, want, out)
	}
	if out, code := runStore(t, "dump", dir); code != 2 || !strings.Contains(out, "--offset is required") {
		t.Fatalf("dump without --offset: exit %d\n%s", code, out)
	}
	if out, code := runStore(t, "verify"); code != 2 {
		t.Fatalf("verify without DIR: exit %d\n%s", code, out)
	}
}
