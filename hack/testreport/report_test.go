package main

import (
	"strings"
	"testing"
)

// stream is a go test -json run of two packages: a fast one that passes with a skipped
// test, and a slow one whose second test fails with output.
const stream = `{"Action":"start","Package":"github.com/mooringhq/mooring/a"}
{"Action":"run","Package":"github.com/mooringhq/mooring/a","Test":"TestFast"}
{"Action":"output","Package":"github.com/mooringhq/mooring/a","Test":"TestFast","Output":"=== RUN   TestFast\n"}
{"Action":"pass","Package":"github.com/mooringhq/mooring/a","Test":"TestFast","Elapsed":0.2}
{"Action":"run","Package":"github.com/mooringhq/mooring/a","Test":"TestSkipped"}
{"Action":"skip","Package":"github.com/mooringhq/mooring/a","Test":"TestSkipped","Elapsed":0}
{"Action":"output","Package":"github.com/mooringhq/mooring/a","Output":"ok  \tgithub.com/mooringhq/mooring/a\t0.3s\n"}
{"Action":"pass","Package":"github.com/mooringhq/mooring/a","Elapsed":0.3}
{"Action":"run","Package":"github.com/mooringhq/mooring/b","Test":"TestSlow"}
{"Action":"pass","Package":"github.com/mooringhq/mooring/b","Test":"TestSlow","Elapsed":41.5}
{"Action":"run","Package":"github.com/mooringhq/mooring/b","Test":"TestBroken"}
{"Action":"output","Package":"github.com/mooringhq/mooring/b","Test":"TestBroken","Output":"    b_test.go:9: want 3 replicas, saw 2\n"}
{"Action":"fail","Package":"github.com/mooringhq/mooring/b","Test":"TestBroken","Elapsed":1.5}
{"Action":"output","Package":"github.com/mooringhq/mooring/b","Output":"FAIL\tgithub.com/mooringhq/mooring/b\t43.1s\n"}
{"Action":"fail","Package":"github.com/mooringhq/mooring/b","Elapsed":43.1}
`

func TestReportShowsFailuresAndSlowestFirst(t *testing.T) {
	var live, table strings.Builder
	r, err := read(strings.NewReader(stream), &live)
	if err != nil {
		t.Fatal(err)
	}
	r.print(&table, 10)
	if r.passed() {
		t.Error("a run with a failed test reported as passed")
	}
	for _, want := range []string{"ok  \tgithub.com/mooringhq/mooring/a", "want 3 replicas, saw 2", "FAIL\tgithub.com/mooringhq/mooring/b"} {
		if !strings.Contains(live.String(), want) {
			t.Errorf("live output lacks %q:\n%s", want, live.String())
		}
	}
	if strings.Contains(live.String(), "=== RUN   TestFast") {
		t.Errorf("a passed test's output was shown:\n%s", live.String())
	}
	lines := strings.Split(table.String(), "\n")
	var rows []string
	for _, l := range lines {
		if strings.HasSuffix(l, " b") || strings.HasSuffix(l, " a") || strings.Contains(l, "TestSlow") || strings.Contains(l, "TestBroken") || strings.Contains(l, "TestFast") {
			rows = append(rows, strings.Join(strings.Fields(l), " "))
		}
	}
	want := []string{
		"43.1s 1 1 0 fail b", "0.3s 1 0 1 pass a",
		"41.5s b TestSlow", "1.5s b TestBroken", "0.2s a TestFast",
	}
	if strings.Join(rows, "|") != strings.Join(want, "|") {
		t.Errorf("table rows:\n%s\nwant:\n%s\nfull table:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"), table.String())
	}
}

func TestReportFailsAPackageThatNeverReported(t *testing.T) {
	r, err := read(strings.NewReader(`{"Action":"run","Package":"p","Test":"TestHangs"}`+"\n"), &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	if r.passed() {
		t.Error("a package cut off mid-run (timeout, killed) reported as passed")
	}
}

func TestReportNamesAPackageItsTestMainSkipped(t *testing.T) {
	in := `{"Action":"output","Package":"github.com/mooringhq/mooring/test/e2e","Output":"e2e: skipped: e2e test: [kwok] missing in bin/k8s; run ` + "`make tools`" + `\n"}
{"Action":"output","Package":"github.com/mooringhq/mooring/test/e2e","Output":"ok  \tgithub.com/mooringhq/mooring/test/e2e\t0.02s\n"}
{"Action":"pass","Package":"github.com/mooringhq/mooring/test/e2e","Elapsed":0.02}
{"Action":"output","Package":"github.com/mooringhq/mooring/api/v1","Output":"?   \tgithub.com/mooringhq/mooring/api/v1\t[no test files]\n"}
{"Action":"skip","Package":"github.com/mooringhq/mooring/api/v1","Elapsed":0}
`
	r, err := read(strings.NewReader(in), &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	r.print(&table, 10)
	if !strings.Contains(table.String(), "test/e2e (skipped: e2e test: [kwok] missing in bin/k8s; run `make tools`)") {
		t.Errorf("the table does not say why test/e2e ran nothing:\n%s", table.String())
	}
	if strings.Contains(table.String(), "api/v1") {
		t.Errorf("a package without tests is in the table:\n%s", table.String())
	}
}
