package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestPercentileIsNearestRank(t *testing.T) {
	var hundred []time.Duration
	for i := 1; i <= 100; i++ {
		hundred = append(hundred, time.Duration(i)*time.Millisecond)
	}
	tests := map[string]struct {
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		"empty":           {nil, 50, 0},
		"one":             {[]time.Duration{7}, 99, 7},
		"median of 100":   {hundred, 50, 50 * time.Millisecond},
		"p90 of 100":      {hundred, 90, 90 * time.Millisecond},
		"p99 of 100":      {hundred, 99, 99 * time.Millisecond},
		"p100 is the max": {hundred, 100, 100 * time.Millisecond},
		"p99 of 3":        {[]time.Duration{1, 2, 3}, 99, 3},
		"p50 of 4":        {[]time.Duration{1, 2, 3, 4}, 50, 2},
		"tiny p is first": {hundred, 0.001, time.Millisecond},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := percentile(tc.sorted, tc.p); got != tc.want {
				t.Fatalf("percentile(p=%v) of %d values = %v, want %v", tc.p, len(tc.sorted), got, tc.want)
			}
		})
	}
}

func TestSummaryAndReport(t *testing.T) {
	// Unsorted on purpose: summarize sorts.
	var direct, portal []result
	for i := 100; i >= 1; i-- {
		direct = append(direct, result{latency: time.Duration(i) * time.Millisecond, ok: true})
		portal = append(portal, result{latency: time.Duration(i)*time.Millisecond + 1500*time.Microsecond, ok: i != 3})
	}
	d := summarize("direct", direct, 200, 2*time.Second)
	p := summarize("portal", portal, 200, 4*time.Second)
	if d.Requests != 100 || d.Errors != 0 || d.RatePerSecond != 50 || d.P50Ms != 50 || d.P90Ms != 90 || d.P99Ms != 99 || d.MaxMs != 100 {
		t.Fatalf("direct summary: %+v", d)
	}
	if p.Errors != 1 || p.RatePerSecond != 25 || p.P50Ms != 51.5 || p.P99Ms != 100.5 {
		t.Fatalf("portal summary: %+v", p)
	}
	r := newReport(d, p)
	if r.AddedP50Ms != 1.5 || r.AddedP99Ms != 1.5 {
		t.Fatalf("added latency: want 1.5 ms at p50 and p99, got %v and %v", r.AddedP50Ms, r.AddedP99Ms)
	}
	var out bytes.Buffer
	if err := writeTable(&out, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"direct", "portal", "51.50", "portal adds 1.50 ms at p50"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("table lacks %q:\n%s", want, out.String())
		}
	}
}
