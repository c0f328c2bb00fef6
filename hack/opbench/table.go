package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

// table prints one row per result file: `opbench table a.json b.json ...`.
func table(w io.Writer, files []string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tN\tready s\tfloor s\tready/floor\tCPU/floor\tw/o operator\tms/CR\twrites/CR\tevents/CR\tGET 404/CR\tidle writes\trestart writes\trestart settle s\top CPU s\tapiserver CPU s\tRSS MiB\tHWM MiB\theap B/obj\tRSS KiB/obj\tchurn p99 child/status s\t")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var r result
		if err := json.Unmarshal(data, &r); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		fmt.Fprintln(tw, row(strings.TrimSuffix(filepath.Base(f), ".json"), &r))
	}
	return tw.Flush()
}

func row(name string, r *result) string {
	cols := []string{name, fmt.Sprint(r.Config.N)}
	l := r.Load
	if l == nil {
		return strings.Join(append(cols, "(no load)"), "\t") + "\t"
	}
	n := float64(r.Config.N)
	ready := fmt.Sprintf("%.2f", l.TAllReady)
	if !l.Converged {
		ready = "not converged"
	}
	floor, ratio, cpu, cpuOthers := "-", "-", "-", "-"
	if r.Floor != nil && r.Floor.TFloor > 0 {
		floor = fmt.Sprintf("%.2f", r.Floor.TFloor)
	}
	if r.Ratios != nil {
		ratio = fmt.Sprintf("%.2fx", r.Ratios.ReadyOverFloor)
	}
	if with, without, ok := r.cpuRatios(); ok {
		cpu, cpuOthers = fmt.Sprintf("%.2fx", with), fmt.Sprintf("%.2fx", without)
	}
	events := 0.0
	for k, v := range l.APIServerWrites {
		if strings.HasSuffix(k, " events") {
			events += v
		}
	}
	cols = append(cols, ready, floor, ratio, cpu, cpuOthers, fmt.Sprintf("%.2f", 1000*l.TAllReady/n),
		fmt.Sprintf("%.2f", l.WritesPerCR), fmt.Sprintf("%.2f", events/n),
		fmt.Sprintf("%.2f", l.Requests.ByCode["404"]/n))
	cols = append(cols, idleCol(r), restartCols(r)[0], restartCols(r)[1],
		fmt.Sprintf("%.1f", l.CPUS), fmt.Sprintf("%.1f", l.OthersCPUS["kube-apiserver"]))
	rss, hwm := l.Manager.RSSKB, l.Manager.HWMKB
	if r.Idle != nil {
		rss, hwm = r.Idle.Manager.RSSKB, r.Idle.Manager.HWMKB
	}
	cols = append(cols, fmt.Sprintf("%.1f", float64(rss)/1024), fmt.Sprintf("%.1f", float64(hwm)/1024))
	heap := "-"
	if m := r.Memory; m != nil && m.CachedObjects > 0 {
		// After the idle window when there was one: at convergence the operator may still
		// be working through its queue, and that garbage is not what the cache costs.
		after := m.HeapAfterIdle
		if after == 0 {
			after = m.HeapConverged
		}
		if after > 0 {
			heap = fmt.Sprintf("%.0f", (after-m.HeapBeforeLoad)/float64(m.CachedObjects))
		}
	}
	// The whole process's resident memory (binary, runtime, heap, stacks) over the objects
	// it caches: the figure to compare with other operators, which publish it so.
	rssPerObject := "-"
	if m := r.Memory; m != nil && m.CachedObjects > 0 && rss > 0 {
		rssPerObject = fmt.Sprintf("%.1f", float64(rss)/float64(m.CachedObjects))
	}
	churn := "-"
	if c := r.Churn; c != nil {
		churn = fmt.Sprintf("%.2f/%.2f", c.ChildLat.P99, c.StatusLat.P99)
		if c.ChildMissing+c.StatusMissing > 0 {
			churn += fmt.Sprintf(" (%d/%d missing)", c.ChildMissing, c.StatusMissing)
		}
	}
	cols = append(cols, heap, rssPerObject, churn)
	return strings.Join(cols, "\t") + "\t"
}

func idleCol(r *result) string {
	if r.Idle == nil {
		return "-"
	}
	return fmt.Sprintf("%.0f", r.Idle.Requests.Writes)
}

func restartCols(r *result) [2]string {
	if r.Restart == nil {
		return [2]string{"-", "-"}
	}
	return [2]string{fmt.Sprintf("%.0f", r.Restart.Writes), fmt.Sprintf("%.1f", r.Restart.SettleS)}
}
