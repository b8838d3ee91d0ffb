package testzone

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"
)

var base = time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)

// dst springs forward by 3 s at base+10 s and falls back by 8 s at
// base+20 s.
var dst = Zone{
	Initial: Offset{Name: "TST", Seconds: 3600},
	Changes: []Change{
		{At: base.Add(10 * time.Second), To: Offset{Name: "TDT", Seconds: 3603, DST: true}},
		{At: base.Add(20 * time.Second), To: Offset{Name: "TST", Seconds: 3595}},
	},
}

// checkZone checks loc's offsets around dst's changes.
func checkZone(t *testing.T, loc *time.Location) {
	t.Helper()
	for _, c := range []struct {
		at     time.Duration
		name   string
		offset int
	}{
		{-time.Hour, "TST", 3600}, {9 * time.Second, "TST", 3600}, {10 * time.Second, "TDT", 3603},
		{19 * time.Second, "TDT", 3603}, {20 * time.Second, "TST", 3595}, {24 * time.Hour, "TST", 3595},
	} {
		name, offset := base.Add(c.at).In(loc).Zone()
		if name != c.name || offset != c.offset {
			t.Errorf("base%+v: zone %s %d, want %s %d", c.at, name, offset, c.name, c.offset)
		}
	}
	// The wall clock jumps 3 s ahead, then 8 s back.
	wall := func(d time.Duration) string { return base.Add(d).In(loc).Format("15:04:05") }
	for d, want := range map[time.Duration]string{9 * time.Second: "13:00:09", 10 * time.Second: "13:00:13",
		19 * time.Second: "13:00:22", 20 * time.Second: "13:00:15"} {
		if got := wall(d); got != want {
			t.Errorf("wall at base+%v: %s, want %s", d, got, want)
		}
	}
}

func TestTZifReadByGo(t *testing.T) {
	data, err := TZif(dst)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte("TZif2")) || !bytes.HasSuffix(data, []byte("\n\n")) {
		t.Fatalf("not a version 2 TZif file: % x", data[:5])
	}
	// 44-byte header, 2 changes: 2*4 + 2 + 3*6 + 12 = 40 bytes of data
	// (32-bit), the same with 64-bit times (48), the footer (2).
	if len(data) != 44+40+44+48+2 {
		t.Fatalf("%d bytes", len(data))
	}
	loc, err := time.LoadLocationFromTZData("Test/DST", data)
	if err != nil {
		t.Fatal(err)
	}
	checkZone(t, loc)
}

// TestZoneFromZONEINFO runs this test binary again with ZONEINFO naming a
// directory Write wrote: time.LoadLocation("Test/DST") in that process
// finds the made-up zone, as a broker process started so does.
func TestZoneFromZONEINFO(t *testing.T) {
	if os.Getenv("TESTZONE_CHILD") != "" {
		loc, err := time.LoadLocation("Test/DST")
		if err != nil {
			t.Fatal(err)
		}
		checkZone(t, loc)
		return
	}
	dir := t.TempDir()
	if err := Write(dir, "Test/DST", dst); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestZoneFromZONEINFO$", "-test.count=1")
	cmd.Env = append(os.Environ(), "TESTZONE_CHILD=1", "ZONEINFO="+dir)
	if out, err := cmd.CombinedOutput(); err != nil || !bytes.Contains(out, []byte("PASS")) {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func TestRefusals(t *testing.T) {
	ok := Offset{Name: "TST", Seconds: 3600}
	for name, z := range map[string]Zone{
		"out of order": {Initial: ok, Changes: []Change{{At: base, To: ok}, {At: base, To: ok}}},
		"after 2038":   {Initial: ok, Changes: []Change{{At: time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC), To: ok}}},
		"short name":   {Initial: Offset{Name: "T", Seconds: 0}},
		"blank name":   {Initial: Offset{Name: "T ST", Seconds: 0}},
		"offset":       {Initial: Offset{Name: "TST", Seconds: 26 * 3600}},
		"too many":     {Initial: ok, Changes: make([]Change, maxChanges+1)},
	} {
		if _, err := TZif(z); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if err := Write(t.TempDir(), "../escape", dst); !errors.Is(err, ErrInvalid) {
		t.Errorf("a name out of the directory: %v", err)
	}
}
