package processtest

import (
	"flag"
	"strconv"
)

// MinParallel raises go test's -parallel, the number of t.Parallel tests
// of the package that run at once, to at least n, unless the command line
// set it. go test's default is GOMAXPROCS: on a 2-core machine two at a
// time, which leaves a package whose parallel tests mostly wait (for a
// client's rebalance or route poll, a timer coming due, a failover) idle
// for most of its run. Call it from TestMain, before m.Run; a package
// calls it only when its parallel tests wait more than they compute
// (README, "Test").
func MinParallel(n int) {
	if !flag.Parsed() {
		flag.Parse() // m.Run does not parse again
	}
	f := flag.Lookup("test.parallel")
	if f == nil {
		return // not a test binary
	}
	set := false
	flag.Visit(func(v *flag.Flag) { set = set || v.Name == "test.parallel" })
	if cur, err := strconv.Atoi(f.Value.String()); set || err != nil || cur >= n {
		return
	}
	_ = f.Value.Set(strconv.Itoa(n))
}
