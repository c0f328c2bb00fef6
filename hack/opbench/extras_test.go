package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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
			APIServerWrites: map[string]float64{"POST events": 1000, "POST configmaps": 3000},
			// 21 CPU-seconds for the rest of the machine plus 4 for the operator, against 10.
			CPUS: 4, OthersCPUS: map[string]float64{"kube-apiserver": 15, "etcd": 4, "harness": 2}},
		Floor:  &floorRes{TFloor: 10, OthersCPUS: map[string]float64{"kube-apiserver": 7, "etcd": 2, "harness": 1}},
		Ratios: &ratios{ReadyOverFloor: 2},
		Memory: &memRes{HeapBeforeLoad: 1000, HeapConverged: 9000, HeapAfterIdle: 5000, CachedObjects: 4},
	}
	cols := strings.Split(row("x", r), "\t")
	// run N ready floor ratio cpu-ratio cpu-ratio-without-operator ms/CR writes/CR events/CR ... heap at index 18
	if cols[2] != "20.00" || cols[4] != "2.00x" || cols[5] != "2.50x" || cols[6] != "2.10x" || cols[7] != "20.00" || cols[9] != "1.00" || cols[18] != "1000" {
		t.Fatalf("row %q", cols)
	}
}

// TestHeapKeepsProfiles checks that a heap reading forces the GC through --gc-url,
// reads go_memstats_heap_alloc_bytes, and, only with --profile-seconds, keeps what the
// GC URL answered as operator-heap-PHASE.pprof.
func TestHeapKeepsProfiles(t *testing.T) {
	var gcs int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/debug/pprof/heap":
			gcs++
			_, _ = w.Write([]byte("heap-profile-bytes"))
		case "/metrics":
			_, _ = w.Write([]byte("# TYPE go_memstats_heap_alloc_bytes gauge\ngo_memstats_heap_alloc_bytes 12345\n"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	for _, seconds := range []int{0, 5} {
		dir := t.TempDir()
		b := &bench{
			c:       &config{gcURL: srv.URL + "/debug/pprof/heap?gc=1", profileSeconds: seconds},
			log:     &logger{t0: time.Now(), quiet: true},
			workdir: dir,
			mgr:     &managerProc{metricsURL: srv.URL + "/metrics"},
		}
		if got := b.heap("converged"); got != 12345 {
			t.Errorf("profile-seconds %d: heap %v, want 12345 from the metrics", seconds, got)
		}
		data, err := os.ReadFile(filepath.Join(dir, "operator-heap-converged.pprof"))
		switch {
		case seconds > 0 && string(data) != "heap-profile-bytes":
			t.Errorf("profile-seconds %d: kept %q (%v), want the GC URL's answer", seconds, data, err)
		case seconds == 0 && err == nil:
			t.Errorf("profile-seconds 0: a heap profile was kept, want none")
		}
	}
	if gcs != 2 {
		t.Errorf("the GC URL was called %d times, want once per reading (2)", gcs)
	}
}
