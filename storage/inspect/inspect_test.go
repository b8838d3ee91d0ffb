package inspect

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
	"github.com/wheelmq/wheelmq/timerwheel"
	"github.com/wheelmq/wheelmq/timerwheel/timerlog"
)

const (
	testSegment = 4096
	testUPF     = 8
	nMessages   = 60
	nTimers     = 100
)

// fixture is a data directory written through the real stores: CommitLog
// records in several segments, consume queues, a timer store, the stage
// checkpoint and the metadata files.
type fixture struct {
	dir   string
	units map[consumequeue.QueueID][]consumequeue.Unit
}

func buildStore(t *testing.T) *fixture {
	t.Helper()
	fx := &fixture{dir: t.TempDir(), units: map[consumequeue.QueueID][]consumequeue.Unit{}}
	st, err := storage.Open(fx.dir, storage.Options{SegmentSize: testSegment, UnitsPerFile: testUPF})
	if err != nil {
		t.Fatal(err)
	}
	host := netip.MustParseAddrPort("10.0.0.1:10911")
	for i := 0; i < nMessages; i++ {
		id := consumequeue.QueueID{Topic: []string{"orders", "audit"}[i%2], QueueID: int32(i % 3)}
		props := map[string]string{message.PropTags: "tag" + fmt.Sprint(i%4), message.PropKeys: fmt.Sprintf("k%d", i)}
		body := []byte(fmt.Sprintf("message body number %d", i))
		rec := &message.Record{Topic: id.Topic, QueueID: id.QueueID, QueueOffset: int64(len(fx.units[id])),
			BornHost: host, StoreHost: host, BornTimestamp: 1_700_000_000_000 + int64(i),
			StoreTimestamp: 1_700_000_000_100 + int64(i), Body: body,
			Properties: message.EncodeProperties(props)}
		b, err := rec.Encode(nil)
		if err != nil {
			t.Fatal(err)
		}
		offs, err := st.CommitLog.Append([][]byte{b})
		if err != nil {
			t.Fatal(err)
		}
		u := consumequeue.Unit{Offset: offs[0], Size: int32(len(b)), TagsCode: message.TagsHashCode(props[message.PropTags])}
		q, err := st.Queues.Queue(id.Topic, id.QueueID)
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Append(u); err != nil {
			t.Fatal(err)
		}
		fx.units[id] = append(fx.units[id], u)
	}
	if err := meta.UpdateCheckpoint(nil, st.CheckpointPath(), "dispatch", st.CommitLog.MaxOffset()); err != nil {
		t.Fatal(err)
	}
	if err := meta.SaveTopics(nil, st.TopicsPath(), meta.DefaultTopics("broker-a", "DefaultCluster", true),
		meta.DataVersion{Timestamp: 1}); err != nil {
		t.Fatal(err)
	}
	offsets := meta.OffsetTable{}
	offsets.Set("orders", "billing", 0, 3)
	if err := meta.SaveOffsets(nil, st.OffsetsPath(), offsets); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	wheel, err := timerwheel.Open(timerwheel.Options{Dir: st.TimerDir(), NoSync: true}, now)
	if err != nil {
		t.Fatal(err)
	}
	var timers []timerwheel.Timer
	for i := int64(0); i < nTimers; i++ {
		timers = append(timers, timerwheel.Timer{Kind: timerwheel.KindNormal, DeliverMs: now + 60_000 + i*7,
			CommitLogOffset: i * 100, QueueOffset: i, Size: 100})
	}
	if err := wheel.Add(timers, now); err != nil {
		t.Fatal(err)
	}
	if err := wheel.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := wheel.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return fx
}

// segPath is the CommitLog segment holding global offset off, and off's
// position in it.
func (fx *fixture) segPath(off int64) (string, int64) {
	base := off / testSegment * testSegment
	return filepath.Join(fx.dir, "commitlog", fmt.Sprintf("%020d", base)), off - base
}

// last returns the unit of the last record in the CommitLog.
func (fx *fixture) last() consumequeue.Unit {
	var last consumequeue.Unit
	for _, us := range fx.units {
		if u := us[len(us)-1]; u.Offset > last.Offset {
			last = u
		}
	}
	return last
}

func flip(t *testing.T, path string, pos int64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[pos] ^= 0x24
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func truncate(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

// TestVerify plants one kind of damage per case in a real store and checks
// the exit status and that a finding names the file and position.
func TestVerify(t *testing.T) {
	orders0 := consumequeue.QueueID{Topic: "orders", QueueID: 0}
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, fx *fixture) (path string, want string)
		exit   int
	}{
		{"clean", func(*testing.T, *fixture) (string, string) { return "", "" }, ExitClean},
		{"flipped byte mid-segment", func(t *testing.T, fx *fixture) (string, string) {
			u := fx.units[orders0][2]
			p, pos := fx.segPath(u.Offset)
			flip(t, p, pos+int64(u.Size)/2)
			return p, fmt.Sprintf("at byte %d (%d bytes): commitlog offset %d: checksum mismatch", pos, u.Size+4, u.Offset)
		}, ExitDamaged},
		{"truncated tail of the last segment", func(t *testing.T, fx *fixture) (string, string) {
			u := fx.last()
			p, pos := fx.segPath(u.Offset)
			truncate(t, p, pos+10)
			return p, fmt.Sprintf("warning %s at byte %d (10 bytes): commitlog offset %d: torn tail", p, pos, u.Offset)
		}, ExitClean},
		{"truncated first segment", func(t *testing.T, fx *fixture) (string, string) {
			p, _ := fx.segPath(0)
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			truncate(t, p, fi.Size()-20)
			return p, "DAMAGE  " + p
		}, ExitDamaged},
		{"damaged consume-queue unit", func(t *testing.T, fx *fixture) (string, string) {
			p := filepath.Join(fx.dir, "consumequeue", "orders", "0", fmt.Sprintf("%020d", 0))
			flip(t, p, 3*consumequeue.UnitSize+7)
			return p, fmt.Sprintf("at byte %d (20 bytes): queue orders/0 unit 3", 3*consumequeue.UnitSize)
		}, ExitDamaged},
		{"consume-queue unit pointing at another queue's record", func(t *testing.T, fx *fixture) (string, string) {
			p := filepath.Join(fx.dir, "consumequeue", "orders", "0", fmt.Sprintf("%020d", 0))
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			// Unit 1 of orders/0 swapped with unit 1 of orders/1.
			other, err := os.ReadFile(filepath.Join(fx.dir, "consumequeue", "orders", "1", fmt.Sprintf("%020d", 0)))
			if err != nil {
				t.Fatal(err)
			}
			copy(data[consumequeue.UnitSize:2*consumequeue.UnitSize], other[consumequeue.UnitSize:])
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			return p, "unit 1"
		}, ExitDamaged},
		{"damaged timerlog frame", func(t *testing.T, fx *fixture) (string, string) {
			p := filepath.Join(fx.dir, "timer", "timerlog", fmt.Sprintf("%020d", 1))
			flip(t, p, 41*timerlog.EntrySize+30)
			return p, fmt.Sprintf("at byte %d (89 bytes): timerlog sequence 42", 41*timerlog.EntrySize)
		}, ExitDamaged},
		{"torn timerlog tail", func(t *testing.T, fx *fixture) (string, string) {
			p := filepath.Join(fx.dir, "timer", "timerlog", fmt.Sprintf("%020d", 1))
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = f.Write([]byte{timerlog.RecordSize, 1, 2, 3})
			_ = f.Close()
			return p, "torn timerlog tail"
		}, ExitClean},
		{"damaged stage checkpoint", func(t *testing.T, fx *fixture) (string, string) {
			p := filepath.Join(fx.dir, "config", "checkpoint")
			flip(t, p, 10)
			return p, "DAMAGE  " + p
		}, ExitDamaged},
		{"one timer checkpoint copy damaged", func(t *testing.T, fx *fixture) (string, string) {
			p := filepath.Join(fx.dir, "timer", "checkpoint")
			flip(t, p, 512+20)
			return p, "warning " + p + " at byte 512 (128 bytes): timer checkpoint copy 1:"
		}, ExitClean},
		{"both timer checkpoint copies damaged", func(t *testing.T, fx *fixture) (string, string) {
			p := filepath.Join(fx.dir, "timer", "checkpoint")
			flip(t, p, 20)
			flip(t, p, 512+20)
			return p, "DAMAGE  " + p + ": no timer checkpoint copy verifies"
		}, ExitDamaged},
		{"topics.json damaged, backup used", func(t *testing.T, fx *fixture) (string, string) {
			p := filepath.Join(fx.dir, "config", "topics.json")
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p+meta.BackupSuffix, data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, data[:len(data)/2], 0o644); err != nil {
				t.Fatal(err)
			}
			return p, "warning " + p + ": unreadable or missing; its .bak copy is used"
		}, ExitClean},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := buildStore(t)
			before := snapshotDir(t, fx.dir)
			path, want := tc.damage(t, fx)
			damaged := snapshotDir(t, fx.dir)
			var out bytes.Buffer
			code := VerifyCommand(&out, fx.dir, Options{})
			if code != tc.exit {
				t.Fatalf("exit %d, want %d\n%s", code, tc.exit, out.String())
			}
			if path != "" && !strings.Contains(out.String(), want) {
				t.Fatalf("output lacks %q\n%s", want, out.String())
			}
			if tc.name == "clean" {
				if !strings.Contains(out.String(), "OK: 0 damaged, 0 warnings") {
					t.Fatalf("clean store not reported clean:\n%s", out.String())
				}
				r, err := Verify(fx.dir, Options{})
				if err != nil {
					t.Fatal(err)
				}
				items := map[string]int64{}
				for _, p := range r.Parts {
					items[p.Part] = p.Items
				}
				if items["commitlog"] != nMessages || items["consumequeue"] != nMessages || items["timerlog"] != nTimers {
					t.Fatalf("parts %+v", r.Parts)
				}
				if before != damaged {
					t.Fatal("fixture changed")
				}
			}
			if after := snapshotDir(t, fx.dir); after != damaged {
				t.Fatal("verify changed the directory")
			}
		})
	}
}

// snapshotDir returns a digest of every file's name, size and content.
func snapshotDir(t *testing.T, dir string) string {
	t.Helper()
	var sb strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(&sb, "%s %d %x\n", p, len(data), data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sb.String()
}

// TestDump dumps records at an offset, across a damaged one.
func TestDump(t *testing.T) {
	fx := buildStore(t)
	us := fx.units[consumequeue.QueueID{Topic: "audit", QueueID: 1}]
	var out bytes.Buffer
	if code := DumpCommand(&out, fx.dir, us[0].Offset, 2, Options{}); code != ExitClean {
		t.Fatalf("exit %d\n%s", code, out.String())
	}
	s := out.String()
	for _, want := range []string{
		fmt.Sprintf("offset %d (%020d byte %d): record of %d bytes", us[0].Offset, us[0].Offset/testSegment*testSegment,
			us[0].Offset%testSegment, us[0].Size),
		"crc32c ok, body crc ok", `TOPIC`, `"audit"`, "QUEUEOFFSET", "PHYSICALOFFSET", "property KEYS = ", "property TAGS = ",
		`"message body number`, "offsetMsgId",
	} {
		if !strings.Contains(s, want) {
			t.Fatalf("dump lacks %q:\n%s", want, s)
		}
	}
	if n := strings.Count(s, ": record of "); n != 2 {
		t.Fatalf("%d records dumped, want 2:\n%s", n, s)
	}

	// A damaged record: reported with its reason, then the next one.
	p, pos := fx.segPath(us[0].Offset)
	flip(t, p, pos+int64(us[0].Size)-8)
	out.Reset()
	if code := DumpCommand(&out, fx.dir, us[0].Offset, 2, Options{}); code != ExitClean {
		t.Fatalf("exit %d\n%s", code, out.String())
	}
	s = out.String()
	next := us[0].Offset + int64(us[0].Size) + 4
	for _, want := range []string{"DAMAGED", "checksum mismatch", fmt.Sprintf("the next entry that verifies is at %d", next),
		"fields as stored (UNVERIFIED)", fmt.Sprintf("offset %d (", next)} {
		if !strings.Contains(s, want) {
			t.Fatalf("dump of damage lacks %q:\n%s", want, s)
		}
	}
	// Outside the log: an error status.
	out.Reset()
	if code := DumpCommand(&out, fx.dir, 1<<40, 1, Options{}); code != ExitError || !strings.Contains(out.String(), "outside the commitlog") {
		t.Fatalf("dump past the end: exit %d %s", code, out.String())
	}
}
