package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestTables(t *testing.T) {
	in := `{"Action":"run","Package":"m/a","Test":"TestX"}
{"Action":"output","Package":"m/a","Test":"TestX","Output":"boom\n"}
{"Action":"fail","Package":"m/a","Test":"TestX","Elapsed":3.5}
{"Action":"pass","Package":"m/a","Test":"TestX/sub","Elapsed":1}
{"Action":"output","Package":"m/a","Test":"TestY","Output":"quiet\n"}
{"Action":"pass","Package":"m/a","Test":"TestY","Elapsed":7.25}
{"Action":"output","Package":"m/a","Output":"=== RUN   TestZ\n"}
{"Action":"fail","Package":"m/a","Elapsed":11}
not json
{"Action":"output","Package":"m/b","Output":"PASS\n"}
{"Action":"output","Package":"m/b","Output":"ok  \tm/b\t2.0s\n"}
{"Action":"pass","Package":"m/b","Elapsed":2}
`
	var echoed bytes.Buffer
	pkgs, tests, failed, err := read(strings.NewReader(in), "m/", &echoed)
	if err != nil {
		t.Fatal(err)
	}
	// TestX's output once it failed; TestY's and the -v lines dropped.
	if echoed.String() != "boom\nnot json\nok  \tm/b\t2.0s\n" {
		t.Errorf("echoed %q", echoed.String())
	}
	if len(pkgs) != 2 || len(tests) != 2 || len(failed) != 2 {
		t.Fatalf("pkgs %v tests %v failed %v", pkgs, tests, failed)
	}
	var b bytes.Buffer
	write(&b, pkgs, tests, failed, 1)
	got := b.String()
	for _, want := range []string{"2 packages, 13 s", "| a | 11.0 | fail |", "| a TestY | 7.2 | pass |", "FAILED a TestX", "    boom"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "| b |") || strings.Contains(got, "TestX/sub") {
		t.Errorf("more than 1 row or a subtest:\n%s", got)
	}
}
