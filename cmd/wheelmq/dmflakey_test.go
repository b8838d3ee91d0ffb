package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// dmFlakey is an ext4 file system on a loop device behind device-mapper,
// whose table can be switched to dm-flakey's drop_writes: from then on the
// device acknowledges every write and keeps none, which is what the disk
// holds after a power cut at that instant.
type dmFlakey struct {
	name, loop, mnt string
	sectors         int64
}

// setupDMFlakey builds the device, or skips the test saying what this
// machine lacks.
func setupDMFlakey(t *testing.T) *dmFlakey {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a power cut on a real device needs root (loop device, device-mapper, mount); the crashfs power-loss test covers the same checks in process")
	}
	for _, tool := range []string{"dmsetup", "losetup", "mkfs.ext4", "mount", "umount"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: the dm-flakey power-cut test needs it", tool)
		}
	}
	if _, err := os.Stat("/dev/mapper/control"); err != nil {
		t.Skipf("no device-mapper in this kernel (/dev/mapper/control: %v): the dm-flakey power-cut test cannot run here", err)
	}
	if out, err := exec.Command("dmsetup", "targets").CombinedOutput(); err != nil || !strings.Contains(string(out), "flakey") {
		t.Skipf("device-mapper has no flakey target here (dmsetup targets: %v %s)", err, out)
	}
	run := func(name string, args ...string) string {
		t.Helper()
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v: %s", name, args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	dir := t.TempDir()
	img := filepath.Join(dir, "disk.img")
	const size = 256 << 20
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, size); err != nil {
		t.Fatal(err)
	}
	d := &dmFlakey{name: fmt.Sprintf("wheelmq-flakey-%d", os.Getpid()), mnt: filepath.Join(dir, "mnt"), sectors: size / 512}
	d.loop = run("losetup", "--find", "--show", img)
	t.Cleanup(func() { _ = exec.Command("losetup", "-d", d.loop).Run() })
	run("dmsetup", "create", d.name, "--table", d.table(false))
	t.Cleanup(func() { _ = exec.Command("dmsetup", "remove", "--retry", d.name).Run() })
	run("mkfs.ext4", "-q", d.dev())
	if err := os.Mkdir(d.mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	d.mount(t)
	t.Cleanup(func() { _ = exec.Command("umount", d.mnt).Run() })
	return d
}

func (d *dmFlakey) dev() string { return "/dev/mapper/" + d.name }

// table is the device's table: the loop device as it is, or dropping every
// write.
func (d *dmFlakey) table(drop bool) string {
	if !drop {
		return fmt.Sprintf("0 %d linear %s 0", d.sectors, d.loop)
	}
	// up 0 s, down 3600 s: down from the start, writes acknowledged and lost
	return fmt.Sprintf("0 %d flakey %s 0 0 3600 1 drop_writes", d.sectors, d.loop)
}

func (d *dmFlakey) mount(t *testing.T) {
	t.Helper()
	if out, err := exec.Command("mount", "-t", "ext4", d.dev(), d.mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount: %v: %s", err, out)
	}
}

// swap loads a table and resumes the device with it.
func (d *dmFlakey) swap(t *testing.T, drop bool) {
	t.Helper()
	for _, args := range [][]string{{"suspend", d.name}, {"load", d.name, "--table", d.table(drop)}, {"resume", d.name}} {
		if out, err := exec.Command("dmsetup", args...).CombinedOutput(); err != nil {
			t.Fatalf("dmsetup %v: %v: %s", args, err, out)
		}
	}
}

// powerCut drops every write from now on, kills p, unmounts (what the page
// cache still held is lost with the writes the device drops), and brings
// the device back as it was at the cut.
func (d *dmFlakey) powerCut(t *testing.T, p *proc) {
	t.Helper()
	d.swap(t, true)
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.wait(t, 10*time.Second)
	if out, err := exec.Command("umount", d.mnt).CombinedOutput(); err != nil {
		t.Fatalf("umount after the cut: %v: %s", err, out)
	}
	d.swap(t, false)
	_ = exec.Command("blockdev", "--flushbufs", d.dev()).Run()
	d.mount(t)
}

// TestPowerCutOnRealDevice runs the real binary on an ext4 file system
// whose device drops every write from a random moment on (dm-flakey), under
// sync-flush sends and timer messages: after the cut and a restart every
// acknowledged message is there and every acknowledged timer is delivered,
// none early. It needs root and device-mapper and skips, saying why,
// elsewhere (TestPowerLoss in cmd/internal/process checks the same in
// process on a file system that forgets unsynced writes).
func TestPowerCutOnRealDevice(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	d := setupDMFlakey(t)
	bin := buildBinary(t)
	dataDir := filepath.Join(d.mnt, "data")
	p1 := startProc(t, bin, dataDir, "--flush", "sync")
	topic := processtest.Unique("cut")
	prod := processtest.Producer(t, p1.namesrv)
	acked := map[string]int64{} // body -> due (0: plain)
	for i := 0; i < 300; i++ {
		body, due := fmt.Sprintf("m-%d", i), int64(0)
		m := primitive.NewMessage(topic, []byte(body))
		if i%3 == 0 {
			due = time.Now().Add(2 * time.Second).UnixMilli()
			m.WithProperty(message.PropTimerDeliverMS, strconv.FormatInt(due, 10))
		}
		if res, err := prod.SendSync(context.Background(), m); err == nil && res.Status == primitive.SendOK {
			acked[body] = due
		}
	}
	d.powerCut(t, p1)
	_ = prod.Shutdown()

	p2 := startProc(t, bin, dataDir, "--flush", "sync")
	time.Sleep(3 * time.Second) // every timer due
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := remoting.Dial(ctx, p2.broker, remoting.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := map[string]int{}
	for q := int32(0); q < 8; q++ {
		recs, err := processtest.ReadQueue(ctx, c, topic, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			got[string(r.Body)]++
			if due := acked[string(r.Body)]; due > 0 && r.StoreTimestamp < due {
				t.Errorf("timer %s delivered %d ms early", r.Body, due-r.StoreTimestamp)
			}
		}
	}
	for body := range acked {
		if got[body] != 1 {
			t.Errorf("%s acknowledged (sync flush) and read back %d times after the power cut", body, got[body])
		}
	}
	t.Logf("%d sends acknowledged before the cut, all read back once", len(acked))
}
