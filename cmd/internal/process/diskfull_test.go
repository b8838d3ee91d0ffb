package process_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/vfs/vfstest"
)

// smallDisk is a file system that can be filled up and given room again.
type smallDisk interface {
	// dataDir is where the broker keeps its store.
	dataDir() string
	// mutate sets up the broker's configuration for this disk.
	mutate(c *pipeline.Config)
	// fill takes the room away, apart from at most headroom bytes (the
	// broker's own sends fill the rest).
	fill(t *testing.T, headroom int64)
	// free gives the room back.
	free(t *testing.T)
}

// faultDisk is the real file system with the fault FS under the stores: a
// full disk refuses every store write.
type faultDisk struct {
	dir string
	fs  *vfstest.FaultFS
}

func (d *faultDisk) dataDir() string                   { return d.dir }
func (d *faultDisk) mutate(c *pipeline.Config)         { c.StoreFS = d.fs }
func (d *faultDisk) fill(_ *testing.T, headroom int64) { d.fs.Full(true) }
func (d *faultDisk) free(*testing.T)                   { d.fs.Full(false) }

// tmpfsDisk is a small tmpfs mounted for the test; a filler file takes its
// room away.
type tmpfsDisk struct {
	mnt    string
	filler string
}

// mountTmpfs mounts a tmpfs of size bytes, or skips the test when this
// machine does not allow it (not root, no CAP_SYS_ADMIN, no tmpfs).
func mountTmpfs(t *testing.T, size int64) *tmpfsDisk {
	t.Helper()
	mnt := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("wheelmq-test", mnt, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0755", size)); err != nil {
		t.Skipf("cannot mount a %d-byte tmpfs here (%v); the disk-full case is covered by the fault-FS variant", size, err)
	}
	// Registered before the broker starts, so it runs after the broker stopped.
	t.Cleanup(func() {
		if err := syscall.Unmount(mnt, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", mnt, err)
		}
	})
	return &tmpfsDisk{mnt: mnt, filler: filepath.Join(mnt, "filler")}
}

func (d *tmpfsDisk) dataDir() string           { return filepath.Join(d.mnt, "data") }
func (d *tmpfsDisk) mutate(c *pipeline.Config) {}

func (d *tmpfsDisk) fill(t *testing.T, headroom int64) {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(d.mnt, &st); err != nil {
		t.Fatal(err)
	}
	avail := int64(st.Bavail) * int64(st.Bsize)
	if avail <= headroom {
		t.Fatalf("only %d bytes free before filling", avail)
	}
	f, err := os.Create(d.filler)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for left := avail - headroom; left > 0; left -= int64(len(chunk)) {
		if _, err := f.Write(chunk[:min(int64(len(chunk)), left)]); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return
			}
			t.Fatal(err)
		}
	}
}

func (d *tmpfsDisk) free(t *testing.T) {
	t.Helper()
	if err := os.Remove(d.filler); err != nil {
		t.Fatal(err)
	}
}

// TestDiskFull fills the disk under a running broker: sends are refused
// with SERVICE_NOT_AVAILABLE and a remark saying the disk is full, nothing
// acknowledged is damaged, the broker stays healthy, and sends succeed
// again once the disk has room. Two disks: the fault FS (always), and a
// real 4 MiB tmpfs where this machine allows mounting one.
func TestDiskFull(t *testing.T) {
	tests := []struct {
		name string
		disk func(t *testing.T) smallDisk
	}{
		{"fault FS", func(t *testing.T) smallDisk { return &faultDisk{dir: t.TempDir(), fs: &vfstest.FaultFS{}} }},
		{"tmpfs mount", func(t *testing.T) smallDisk { return mountTmpfs(t, 4<<20) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			disk := tt.disk(t)
			n := processtest.Start(t, processtest.Options{Dir: disk.dataDir(), Metrics: true, Mutate: disk.mutate})
			topic := processtest.Unique("full")
			processtest.CreateTopic(t, n, topic, 1)
			b := dialRaw(t, n, topic)
			body := strings.Repeat("x", 1000)
			var acked []string
			for i := 0; i < 20; i++ {
				acked = append(acked, fmt.Sprintf("%04d-before-%s", i, body))
				b.mustSend(acked[i])
			}

			disk.fill(t, 64<<10)
			var resp *remoting.Command
			for i := 0; ; i++ { // the sends use up the headroom, then are refused
				msg := fmt.Sprintf("%04d-filling-%s", i, body)
				if resp = b.send(msg); resp.Code != remoting.Success {
					break
				}
				acked = append(acked, msg)
				if i > 1000 {
					t.Fatal("the disk never filled up")
				}
			}
			if resp.Code != remoting.ServiceNotAvailable || !strings.Contains(resp.Remark, "disk is full") {
				t.Fatalf("send to a full disk: code %d %q, want SERVICE_NOT_AVAILABLE saying the disk is full", resp.Code, resp.Remark)
			}
			for i := 0; i < 5; i++ { // and keep being refused, without harm (as large as the refused one:
				// a smaller message may still fit in the last bytes of a real disk)
				if r := b.send(fmt.Sprintf("%04d-refused-%s", i, body)); r.Code != remoting.ServiceNotAvailable {
					t.Fatalf("send %d to a full disk: code %d %q", i, r.Code, r.Remark)
				}
			}
			// What is readable while the disk is full is undamaged (body CRCs are
			// checked); the rest may wait for dispatch, paused by the full disk.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			recs, err := processtest.ReadQueue(ctx, b.c, topic, 0)
			cancel()
			if err != nil {
				t.Fatalf("read while the disk is full: %v", err)
			}
			for i, r := range recs {
				if string(r.Body) != acked[i] {
					t.Fatalf("message %d read back as %.20q, want %.20q", i, r.Body, acked[i])
				}
			}
			t.Logf("%d messages acknowledged, %d readable while the disk is full", len(acked), len(recs))

			disk.free(t)
			for i := 0; i < 20; i++ {
				msg := fmt.Sprintf("%04d-after-%s", i, body)
				b.mustSend(msg)
				acked = append(acked, msg)
			}
			seen := b.checkReadable(acked)
			for _, a := range acked {
				if seen[a] != 1 {
					t.Fatalf("message %.20q read %d times", a, seen[a])
				}
			}
			if len(seen) != len(acked) {
				t.Fatalf("%d distinct messages read back, %d acknowledged: a refused send was stored", len(seen), len(acked))
			}
			if code, body := healthz(t, n.MetricsAddr()); code != http.StatusOK {
				t.Fatalf("/healthz %d %q after the disk had room again", code, body)
			}
		})
	}
}

// TestDiskWatermarkOnARealDisk runs a broker on a small tmpfs with the disk
// sampled for real (statfs), fills the disk past --disk-full-ratio with a
// file of its own: sends are refused at once with SERVICE_NOT_AVAILABLE and
// the disk-full remark while pulls go on, and accepted again once the file
// is gone.
func TestDiskWatermarkOnARealDisk(t *testing.T) {
	disk := mountTmpfs(t, 16<<20)
	n := processtest.Start(t, processtest.Options{Dir: disk.dataDir(), Metrics: true, Mutate: func(c *pipeline.Config) {
		c.DiskUsage = nil // statfs on the data directory
		c.DiskSampleInterval = 20 * time.Millisecond
		c.DiskCleanRatio, c.DiskForceCleanRatio, c.DiskFullRatio = 0.9, 0.9, 0.9
	}})
	topic := processtest.Unique("watermark")
	processtest.CreateTopic(t, n, topic, 1)
	b := dialRaw(t, n, topic)
	b.mustSend("before the disk filled up")

	disk.fill(t, 512<<10) // about 97 % used
	var resp *remoting.Command
	deadline := time.Now().Add(5 * time.Second)
	for {
		if resp = b.send("while the disk is full"); resp.Code != remoting.Success {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("sends still accepted 5 s after the disk passed the full ratio")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if resp.Code != remoting.ServiceNotAvailable || !strings.Contains(resp.Remark, "disk is full") {
		t.Fatalf("send past the watermark: code %d %q, want SERVICE_NOT_AVAILABLE saying the disk is full", resp.Code, resp.Remark)
	}
	if v := scrape(t, n.MetricsAddr(), "wheelmq_store_disk_used_ratio"); v < 0.9 {
		t.Fatalf("wheelmq_store_disk_used_ratio = %v with the disk past the full ratio", v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	recs, err := processtest.ReadQueue(ctx, b.c, topic, 0)
	cancel()
	if err != nil || len(recs) == 0 || string(recs[0].Body) != "before the disk filled up" {
		t.Fatalf("pull while the disk is full: %d records, %v", len(recs), err)
	}

	disk.free(t)
	deadline = time.Now().Add(5 * time.Second)
	for b.send("after the disk has room").Code != remoting.Success {
		if time.Now().After(deadline) {
			t.Fatal("sends still refused 5 s after the disk has room again")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
