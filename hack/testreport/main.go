// Command testreport reads `go test -json` on standard input and prints what a person
// reads: each package's result line as go test prints it, the output of every failed
// test, then a table of each package's time and the ten slowest tests. `make test` and
// its tiers pipe into it. It exits 1 when a test or package failed, or when the input
// ended before a package reported.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	slowest := flag.Int("slowest", 10, "how many of the slowest tests to list")
	flag.Parse()
	r, err := read(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	r.print(os.Stdout, *slowest)
	if !r.passed() {
		os.Exit(1)
	}
}

// copyThrough is where read echoes lines that are not JSON (build errors, vet output).
var copyThrough io.Writer = os.Stderr
