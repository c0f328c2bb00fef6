package main

import (
	"strings"
	"testing"
	"time"
)

func TestChurnLatencyIsRecordedOnce(t *testing.T) {
	tr := &tracker{churn: map[int]*churnItem{}, churnSlot: 1}
	t0 := time.Now()
	tr.churn[3] = &churnItem{at: t0, gen: 5}
	tr.churnChild(3, 0, t0.Add(time.Second)) // another child: not the churn child
	tr.churnStatus(3, 4, t0.Add(time.Second))
	if it := tr.churn[3]; !it.childAt.IsZero() || !it.statusAt.IsZero() {
		t.Fatalf("recorded too early: %+v", it)
	}
	tr.churnChild(3, 1, t0.Add(2*time.Second))
	tr.churnChild(3, 1, t0.Add(3*time.Second))
	tr.churnStatus(3, 5, t0.Add(4*time.Second))
	tr.churnStatus(3, 6, t0.Add(5*time.Second))
	it := tr.churn[3]
	if it.childAt.Sub(t0) != 2*time.Second || it.statusAt.Sub(t0) != 4*time.Second {
		t.Fatalf("want the first child update (2s) and the first status at the generation (4s), got %v %v", it.childAt.Sub(t0), it.statusAt.Sub(t0))
	}
	if !tr.churnDone() {
		t.Fatal("every change arrived, churnDone must say so")
	}
}

func TestRowUsesHeapAfterIdle(t *testing.T) {
	r := &result{
		Config: resultConfig{N: 1000},
		Load: &loadRes{Converged: true, TAllReady: 20, WritesPerCR: 5,
			APIServerWrites: map[string]float64{"POST events": 1000, "POST configmaps": 3000}},
		Floor:  &floorRes{TFloor: 10},
		Ratios: &ratios{ReadyOverFloor: 2},
		Memory: &memRes{HeapBeforeLoad: 1000, HeapConverged: 9000, HeapAfterIdle: 5000, CachedObjects: 4},
	}
	cols := strings.Split(row("x", r), "\t")
	// run N ready floor ratio ms/CR writes/CR events/CR ... heap at index 16
	if cols[2] != "20.00" || cols[4] != "2.00x" || cols[5] != "20.00" || cols[7] != "1.00" || cols[16] != "1000" {
		t.Fatalf("row %q", cols)
	}
}
