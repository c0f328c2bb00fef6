package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64 // seconds
	Output  string
}

// pkg is what the report keeps about one package.
type pkg struct {
	name                 string
	action               string // pass, fail or skip; "" while it runs
	elapsed              float64
	passed, failed, skip int
	// output is the package's own output (TestMain's lines, its result line).
	output strings.Builder
	// tests holds each running test's output until its result decides whether it is shown.
	tests map[string]*strings.Builder
}

// test is one finished top-level test or subtest.
type test struct {
	pkg, name string
	elapsed   float64
}

// report is everything read.
type report struct {
	pkgs  []*pkg
	byPkg map[string]*pkg
	tests []test
}

// read consumes go test -json from in, echoing each package's result line and every
// failed test's output to out as they arrive.
func read(in io.Reader, out io.Writer) (*report, error) {
	r := &report{byPkg: map[string]*pkg{}}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(copyThrough, "%s\n", line)
			continue
		}
		r.add(e, out)
	}
	return r, sc.Err()
}

func (r *report) pkg(name string) *pkg {
	p := r.byPkg[name]
	if p == nil {
		p = &pkg{name: name, tests: map[string]*strings.Builder{}}
		r.byPkg[name] = p
		r.pkgs = append(r.pkgs, p)
	}
	return p
}

func (r *report) add(e event, out io.Writer) {
	if e.Package == "" {
		return
	}
	p := r.pkg(e.Package)
	if e.Test == "" {
		switch e.Action {
		case "output":
			p.output.WriteString(e.Output)
		case "pass", "fail", "skip":
			p.action, p.elapsed = e.Action, e.Elapsed
			if e.Action == "fail" || p.failed > 0 {
				_, _ = io.WriteString(out, p.output.String()) // TestMain's reasons, the FAIL line
			} else {
				_, _ = io.WriteString(out, resultLine(p.output.String()))
			}
		}
		return
	}
	switch e.Action {
	case "run":
		p.tests[e.Test] = &strings.Builder{}
	case "output":
		if b := p.tests[e.Test]; b != nil {
			b.WriteString(e.Output)
		}
	case "pass", "fail", "skip":
		b := p.tests[e.Test]
		delete(p.tests, e.Test)
		switch e.Action {
		case "pass":
			p.passed++
		case "skip":
			p.skip++
		case "fail":
			p.failed++
			if b != nil && !strings.Contains(e.Test, "/") {
				_, _ = io.WriteString(out, b.String()) // a subtest's output is in its parent's
			}
		}
		r.tests = append(r.tests, test{pkg: e.Package, name: e.Test, elapsed: e.Elapsed})
	}
}

// resultLine is the last "ok ..." or "?" line of a package's output, the one go test
// prints without -v.
func resultLine(out string) string {
	lines := strings.SplitAfter(out, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := lines[i]; strings.HasPrefix(l, "ok ") || strings.HasPrefix(l, "?") || strings.HasPrefix(l, "FAIL") {
			return l
		}
	}
	return ""
}

// passed reports whether every package that started passed or was skipped.
func (r *report) passed() bool {
	for _, p := range r.pkgs {
		if p.action == "fail" || p.action == "" || p.failed > 0 {
			return false
		}
	}
	return true
}

// print writes the table of packages with tests, slowest first, and the n slowest tests.
func (r *report) print(w io.Writer, n int) {
	var pkgs []*pkg
	var total float64
	for _, p := range r.pkgs {
		if p.action != "skip" { // "skip" is go test's "[no test files]"
			pkgs = append(pkgs, p)
			total += p.elapsed
		}
	}
	slices.SortStableFunc(pkgs, func(a, b *pkg) int { return cmpDesc(a.elapsed, b.elapsed) })
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 8, 2, ' ', 0)
	fmt.Fprintf(&buf, "\nPackages by time (%d; %s summed):\n", len(pkgs), strings.TrimSpace(seconds(total)))
	fmt.Fprintln(tw, "   time\tpass\tfail\tskip\tresult\tpackage")
	for _, p := range pkgs {
		result := p.action
		if result == "" {
			result = "did not finish"
		}
		fmt.Fprintf(tw, "%s\t%4d\t%4d\t%4d\t%s\t%s%s\n", seconds(p.elapsed), p.passed, p.failed, p.skip, result, short(p.name), skipped(p.output.String()))
	}
	_ = tw.Flush() // into a bytes.Buffer
	tests := slices.Clone(r.tests)
	slices.SortStableFunc(tests, func(a, b test) int { return cmpDesc(a.elapsed, b.elapsed) })
	var top []test
	for _, t := range tests {
		if len(top) == n {
			break
		}
		if !strings.Contains(t.name, "/") { // a subtest's time is in its parent's
			top = append(top, t)
		}
	}
	fmt.Fprintf(&buf, "\nThe %d slowest tests:\n", len(top))
	tw = tabwriter.NewWriter(&buf, 0, 8, 2, ' ', 0)
	for _, t := range top {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", seconds(t.elapsed), short(t.pkg), t.name)
	}
	_ = tw.Flush()              // into a bytes.Buffer
	_, _ = w.Write(buf.Bytes()) // the terminal: nothing to do when it is gone
}

// skipped is the reason a package's TestMain gave for running none of its tests
// (clusterenv.Main outside the e2e tier, say), as " (skipped: ...)", or "".
func skipped(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if _, why, ok := strings.Cut(l, ": skipped: "); ok {
			return " (skipped: " + why + ")"
		}
	}
	return ""
}

func cmpDesc(a, b float64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

func seconds(s float64) string { return fmt.Sprintf("%6.1fs", s) }

// short is a package path without the module's, as people name them.
func short(path string) string { return strings.TrimPrefix(path, module+"/") }

const module = "github.com/mooringhq/mooring"
