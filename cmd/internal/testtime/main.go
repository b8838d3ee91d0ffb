// Command testtime reads `go test -json` output and tells where the time
// of a test run went: the slowest packages and the slowest top-level
// tests, as Markdown tables (README's "Test" section keeps one), and
// every failed test with the tail of its output.
//
//	go test -json ./... > run.json
//	go run ./cmd/internal/testtime -n 10 < run.json
//
// With -echo it also prints, as the events stream in, what go test would
// have printed without -json: each package's result line, and a failed
// test's whole output when it fails (.ci/run pipes the test command
// through it).
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
	echo := flag.Bool("echo", false, "print the test output as go test without -json would")
	flag.Parse()
	var out io.Writer
	if *echo {
		out = os.Stdout
	}
	pkgs, tests, failed, err := read(os.Stdin, *module, out)
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
// output tail of each failure. Every output line also goes to echo (nil:
// nowhere) as it comes.
func read(r io.Reader, module string, echo io.Writer) (pkgs, tests []result, failed []failure, err error) {
	out := map[string][]string{}
	held := map[string][]string{} // echo: a running test's whole output
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			if echo != nil { // a line that is not an event (a build error)
				fmt.Fprintln(echo, sc.Text())
			}
			continue
		}
		pkg := strings.TrimPrefix(e.Package, module)
		key := pkg + " " + e.Test
		if echo != nil {
			echoEvent(echo, e, key, held)
		}
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

// verbose are the lines of a package's output that go test prints only
// with -v (which -json implies).
var verbose = []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME", "--- PASS", "--- SKIP", "PASS\n"}

// echoEvent prints what go test without -v prints of e: a package's own
// lines (its result), and a test's output once the test has failed (held
// until then; dropped when it passes).
func echoEvent(w io.Writer, e event, key string, held map[string][]string) {
	if e.Test == "" {
		for _, v := range verbose {
			if strings.HasPrefix(strings.TrimLeft(e.Output, " "), v) {
				return
			}
		}
		fmt.Fprint(w, e.Output)
		return
	}
	switch e.Action {
	case "output":
		held[key] = append(held[key], e.Output)
	case "fail":
		for _, l := range held[key] {
			fmt.Fprint(w, l)
		}
		delete(held, key)
	case "pass", "skip":
		delete(held, key)
	}
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
