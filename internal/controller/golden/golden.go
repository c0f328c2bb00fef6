// Package golden compares what a controller's builders produce with files an earlier
// version of them wrote, so that a change to the builders shows, line by line in the
// diff of testdata/*.golden.json, what it does to existing objects' children.
//
// `go test ./internal/controller/<kind> -run Golden -update` rewrites the files from the
// current builders; review every line of the resulting diff before committing it.
package golden

import (
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"
)

// Update rewrites the golden files instead of comparing with them.
var Update = flag.Bool("update", false, "rewrite testdata/*.golden.json from the current builders")

// JSON compares v, as indented JSON, with the file (rewriting it first under -update), and
// fails the test at the first line that differs.
func JSON(t testing.TB, file string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *Update {
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run the test with -update to write it)", err)
	}
	if string(want) == string(got) {
		return
	}
	gotLines, wantLines := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(gotLines), len(wantLines)) {
		g, w := line(gotLines, i), line(wantLines, i)
		if g != w {
			t.Errorf("%s differs from the builders' output at line %d:\n got %s\nwant %s\n(if the change is meant, rerun with -update and review the diff)", file, i+1, g, w)
			return
		}
	}
}

func line(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "<end of file>"
}
