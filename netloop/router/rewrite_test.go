package router

import "flag"

var rewrite = flag.Bool("rewrite", false, "rewrite the golden files in testdata/")
