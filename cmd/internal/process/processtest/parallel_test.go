package processtest

import (
	"flag"
	"strconv"
	"testing"
)

// MinParallel raises -test.parallel when the command line left it at its
// default, never lowers it, and leaves a value given on the command line.
func TestMinParallel(t *testing.T) {
	f := flag.Lookup("test.parallel")
	if f == nil {
		t.Fatal("no test.parallel flag in a test binary")
	}
	orig := f.Value.String()
	t.Cleanup(func() { _ = f.Value.Set(orig) })
	explicit := false
	flag.Visit(func(v *flag.Flag) { explicit = explicit || v.Name == "test.parallel" })
	cur, err := strconv.Atoi(orig)
	if err != nil {
		t.Fatalf("test.parallel = %q", orig)
	}
	MinParallel(cur + 3)
	want := cur + 3
	if explicit {
		want = cur
	}
	if got := f.Value.String(); got != strconv.Itoa(want) {
		t.Fatalf("after MinParallel(%d) from %d (set on the command line: %v): %s, want %d", cur+3, cur, explicit, got, want)
	}
	MinParallel(1)
	if got := f.Value.String(); got != strconv.Itoa(want) {
		t.Fatalf("MinParallel(1) changed %d to %s", want, got)
	}
}
