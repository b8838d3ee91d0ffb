// Command testtime reads `go test -json` output and tells where the time
// of a test run went: the slowest packages and the slowest top-level
// tests, as Markdown tables (README's "Test" section keeps one), and
// every failed test with the tail of its output.
//
//	go test -json ./... > run.json
//	go run ./cmd/internal/testtime -n 10 < run.json
//
// It exits 1 when a test or package failed, 0 otherwise.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// result is how one package or top-level test ended.
type result struct {
	pkg, test, action string
	elapsed           float64
}

func main() {
	n := flag.Int("n", 10, "rows of each table")
	module := flag.String("module", "github.com/wheelmq/wheelmq/", "prefix cut from package paths")
	flag.Parse()
	pkgs, tests, failed, err := read(os.Stdin, *module)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testtime:", err)
		os.Exit(2)
	}
	write(os.Stdout, pkgs, tests, failed, *n)
	if len(failed) > 0 {
		os.Exit(1)
	}
}

// failure is a failed test (or package) and the last lines it printed.
type failure struct {
	name string
	tail []string
}

// read collects packages' and top-level tests' results; failed keeps the
// output tail of each failure.
func read(r io.Reader, module string) (pkgs, tests []result, failed []failure, err error) {
	out := map[string][]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue // a build error line, not an event
		}
		pkg := strings.TrimPrefix(e.Package, module)
		key := pkg + " " + e.Test
		switch e.Action {
		case "output":
			o := append(out[key], strings.TrimRight(e.Output, "\n"))
			if len(o) > 40 {
				o = o[len(o)-40:]
			}
			out[key] = o
		case "pass", "fail", "skip":
			res := result{pkg: pkg, test: e.Test, action: e.Action, elapsed: e.Elapsed}
			switch {
			case e.Test == "":
				pkgs = append(pkgs, res)
			case !strings.Contains(e.Test, "/"):
				tests = append(tests, res)
			}
			if e.Action == "fail" && !strings.Contains(e.Test, "/") {
				failed = append(failed, failure{name: key, tail: out[key]})
			}
			delete(out, key)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, nil, fmt.Errorf("read go test -json: %w", err)
	}
	return pkgs, tests, failed, nil
}

// write prints the two tables and the failures.
func write(w io.Writer, pkgs, tests []result, failed []failure, n int) {
	var sum float64
	for _, p := range pkgs {
		sum += p.elapsed
	}
	fmt.Fprintf(w, "%d packages, %.0f s of package time in all\n\n", len(pkgs), sum)
	table(w, "package", pkgs, n, func(r result) string { return r.pkg })
	fmt.Fprintln(w)
	table(w, "test", tests, n, func(r result) string { return r.pkg + " " + r.test })
	for _, f := range failed {
		fmt.Fprintf(w, "\nFAILED %s\n", f.name)
		for _, l := range f.tail {
			fmt.Fprintln(w, "    "+l)
		}
	}
}

// table prints the n slowest of rs.
func table(w io.Writer, what string, rs []result, n int, name func(result) string) {
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].elapsed > rs[j].elapsed })
	fmt.Fprintf(w, "| %s | seconds | result |\n|---|---:|---|\n", what)
	for i, r := range rs {
		if i == n {
			break
		}
		fmt.Fprintf(w, "| %s | %.1f | %s |\n", name(r), r.elapsed, r.action)
	}
}
