package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"
	"time"
)

// Summary is what one target (the portal, or the API server directly) achieved.
type Summary struct {
	Target string `json:"target"`
	// Requests were sent; Errors of them failed or answered other than 200.
	Requests int `json:"requests"`
	Errors   int `json:"errors"`
	// RatePerSecond is the completed requests over the time from the first send to the
	// last answer; TargetRate is the rate they were sent at.
	RatePerSecond float64 `json:"ratePerSecond"`
	TargetRate    float64 `json:"targetRate"`
	// Latencies in milliseconds, measured from when each request was due, so that a
	// stalled server is charged for the requests queued behind it.
	P50Ms float64 `json:"p50Ms"`
	P90Ms float64 `json:"p90Ms"`
	P99Ms float64 `json:"p99Ms"`
	MaxMs float64 `json:"maxMs"`
}

// Report is one run: both targets and what the portal adds.
type Report struct {
	Users          int    `json:"users"`
	ObjectsPerUser int    `json:"objectsPerUser"`
	Duration       string `json:"duration"`
	// Load1Before and Load1After are the one-minute load average when the measurement
	// started and ended (the benchmark's own load is in the second).
	Load1Before float64   `json:"load1Before"`
	Load1After  float64   `json:"load1After"`
	Started     time.Time `json:"started"`
	Direct      Summary   `json:"direct"`
	Portal      Summary   `json:"portal"`
	// AddedP50Ms and AddedP99Ms are the portal's percentile less the direct one.
	AddedP50Ms float64 `json:"addedP50Ms"`
	AddedP99Ms float64 `json:"addedP99Ms"`
	// Revocation is how long a revocation made elsewhere took to reach the portal.
	Revocation Revocation `json:"revocation"`
}

// percentile is the nearest-rank p-th percentile (0 < p <= 100) of sorted; 0 when empty.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// result is one request's outcome.
type result struct {
	latency time.Duration
	ok      bool
}

// summarize reduces the results of one target, sent at rate over elapsed (first send
// to last answer). Failed requests count in the latencies too: a fast error is no
// success, but hiding it would flatter the percentiles less than it hides the failure,
// so the errors are reported beside them.
func summarize(target string, results []result, rate float64, elapsed time.Duration) Summary {
	lat := make([]time.Duration, 0, len(results))
	s := Summary{Target: target, Requests: len(results), TargetRate: rate}
	for _, r := range results {
		lat = append(lat, r.latency)
		if !r.ok {
			s.Errors++
		}
	}
	slices.Sort(lat)
	if elapsed > 0 {
		s.RatePerSecond = float64(len(results)) / elapsed.Seconds()
	}
	s.P50Ms, s.P90Ms, s.P99Ms = ms(percentile(lat, 50)), ms(percentile(lat, 90)), ms(percentile(lat, 99))
	if len(lat) > 0 {
		s.MaxMs = ms(lat[len(lat)-1])
	}
	return s
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/float64(time.Millisecond)*100) / 100 }

// newReport puts the two summaries side by side.
func newReport(direct, portal Summary) Report {
	return Report{Direct: direct, Portal: portal,
		AddedP50Ms: math.Round((portal.P50Ms-direct.P50Ms)*100) / 100,
		AddedP99Ms: math.Round((portal.P99Ms-direct.P99Ms)*100) / 100}
}

// writeTable prints the report as a table.
func writeTable(w io.Writer, r Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "target\trequests\terrors\treq/s\tp50 ms\tp90 ms\tp99 ms\tmax ms\t\n")
	for _, s := range []Summary{r.Direct, r.Portal} {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%.2f\t%.2f\t%.2f\t%.2f\t\n",
			s.Target, s.Requests, s.Errors, s.RatePerSecond, s.P50Ms, s.P90Ms, s.P99Ms, s.MaxMs)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "portal adds %.2f ms at p50 and %.2f ms at p99 (%d users, %d objects each, %s at %.0f req/s, load average %.2f before, %.2f after)\n",
		r.AddedP50Ms, r.AddedP99Ms, r.Users, r.ObjectsPerUser, r.Duration, r.Portal.TargetRate, r.Load1Before, r.Load1After)
	if err != nil || r.Revocation.Users == 0 {
		return err
	}
	_, err = fmt.Fprintf(w, "a revocation written elsewhere ended the session on the portal after %.2f ms at p50, %.2f ms at most (%d users, the watch's delay)\n",
		r.Revocation.P50Ms, r.Revocation.MaxMs, r.Revocation.Users)
	return err
}
