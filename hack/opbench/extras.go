package main

// Mooring's additions to the shared harness: the Go heap after a forced GC (so memory per
// cached object can be read from a run), CPU profiles of kube-apiserver and the operator
// during the load (and of kube-apiserver during the floor, to diff against), unrelated
// objects in the cluster (to show what the operator does not cache), and a churn phase
// (spec changes at a fixed rate on the converged objects, with the latency from each
// change to its child's update and to the status that observed it).

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"text/template"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func addExtraFlags(fs *flag.FlagSet, c *config) {
	fs.StringVar(&c.gcURL, "gc-url", "", "URL the harness GETs to make the operator collect garbage before it reads go_memstats_heap_alloc_bytes, e.g. http://{{PPROF_ADDR}}/debug/pprof/heap?gc=1 (same tokens); empty: heap read without a GC")
	fs.StringVar(&c.pprofURL, "pprof-url", "", "the operator's /debug/pprof base URL (same tokens); with --profile-seconds its CPU profile is taken during the load")
	fs.IntVar(&c.profileSeconds, "profile-seconds", 0, "take CPU profiles of kube-apiserver (and the operator, with --pprof-url) for this many seconds from the first create, and of kube-apiserver from the floor's first create; written to the workdir")
	fs.IntVar(&c.bgSecrets, "background-secrets", 0, "before the operator starts, create this many unrelated Secrets in namespace PREFIX-unrelated")
	fs.IntVar(&c.bgSecretBytes, "background-secret-bytes", 1<<20, "size of each unrelated Secret's data")
	fs.IntVar(&c.bgConfigMaps, "background-configmaps", 0, "before the operator starts, create this many unrelated ConfigMaps (1 KiB each) in namespace PREFIX-unrelated")
	fs.Float64Var(&c.churnRate, "churn-rate", 0, "after idle, patch this many CRs per second (0: no churn phase)")
	fs.DurationVar(&c.churnDuration, "churn-duration", 2*time.Minute, "how long the churn phase patches")
	fs.StringVar(&c.churnPatchText, "churn-patch", "", "JSON merge patch of one change, a text/template with {{.Name}} {{.Namespace}}; {{.Index}} is the change's sequence number, so every change differs")
	fs.StringVar(&c.churnChildFlag, "churn-child", "", "the --child (same text) whose update counts as the change applied")
}

func (c *config) completeExtras() error {
	if c.churnRate <= 0 {
		return nil
	}
	if c.churnPatchText == "" || c.churnChildFlag == "" {
		return errors.New("--churn-rate needs --churn-patch and --churn-child")
	}
	if !slices.Contains(c.childFlags, c.churnChildFlag) {
		return fmt.Errorf("--churn-child %q must be one of the --child flags", c.churnChildFlag)
	}
	t, err := parseTemplateText("churn-patch", c.churnPatchText)
	if err != nil {
		return err
	}
	c.churnPatch = t
	return nil
}

// converge runs the load, the idle window and the churn phase, reading the operator's
// heap at their edges and taking CPU profiles during the load.
func (b *bench) converge(ctx context.Context, pre opStats) error {
	m := b.res.Memory
	m.HeapBeforeLoad = b.heap("before-load")
	profiles := b.profile(ctx)
	defer profiles.Wait()
	conv, err := b.load(ctx, pre)
	if err != nil {
		return err
	}
	m.HeapConverged = b.heap("converged")
	if m.HeapConverged > 0 {
		m.HeapPerCachedObject = round3((m.HeapConverged - m.HeapBeforeLoad) / float64(m.CachedObjects))
	}
	if !b.res.Load.Converged {
		return nil
	}
	if b.c.idle > 0 {
		if err := b.idle(ctx, conv); err != nil {
			return err
		}
		if m.HeapConverged > 0 {
			m.HeapAfterIdle = b.heap("after-idle")
			m.HeapPerCachedObject = round3((m.HeapAfterIdle - m.HeapBeforeLoad) / float64(m.CachedObjects))
		}
	}
	profiles.Wait()
	return b.churn(ctx)
}

// minRestartActivity is how much activity the restarted operator must show before its
// empty queues count as drained: with a reconcile metric, one reconcile per CR (an
// operator re-checks each object after a restart). Without it, a second controller that
// starts first (a certificate rotator, whose cache is small) would make the queues look
// drained while the big informers are still listing. When the first process reported
// reconciles, the new one must too: until it does, its controllers have not started
// (they wait for their informers' lists), and its few list requests are no activity.
func (b *bench) minRestartActivity(s opStats) float64 {
	if s.HasReconcileMetric || (b.res.Totals != nil && b.res.Totals.HasReconcileMetric) {
		return float64(b.c.n)
	}
	return 1
}

// memRes is the operator's Go heap (go_memstats_heap_alloc_bytes, after a GC when
// --gc-url is set) at the phase edges.
type memRes struct {
	AfterGC        bool    `json:"after_gc"`
	HeapBeforeLoad float64 `json:"heap_before_load_bytes"`
	HeapConverged  float64 `json:"heap_converged_bytes"`
	HeapAfterIdle  float64 `json:"heap_after_idle_bytes,omitempty"`
	CachedObjects  int     `json:"cached_objects"`
	// (heap after idle, or at convergence without idle, - heap before load) / cached objects
	HeapPerCachedObject float64 `json:"heap_per_cached_object_bytes"`
	Background          string  `json:"background,omitempty"`
}

// heap makes the operator collect garbage (with --gc-url) and returns its heap in use.
// With --profile-seconds, what the GC URL answers (a heap profile, when it is pprof's) is
// kept in the workdir as operator-heap-PHASE.pprof.
func (b *bench) heap(phase string) float64 {
	if b.mgr == nil || b.mgr.metricsURL == "" {
		return 0
	}
	if b.c.gcURL != "" {
		if resp, err := http.Get(substituteTokens(b.c.gcURL, b.mgr.tokens)); err == nil {
			w := io.Discard
			if b.c.profileSeconds > 0 && resp.StatusCode == http.StatusOK {
				path := filepath.Join(b.workdir, "operator-heap-"+phase+".pprof")
				if f, err := os.Create(path); err == nil {
					defer func() { _ = f.Close(); b.log.printf("profile: %s", path) }()
					w = f
				}
			}
			_, _ = io.Copy(w, resp.Body)
			_ = resp.Body.Close()
		}
	}
	ss, _, err := scrape(b.mgr.metricsURL)
	if err != nil {
		return 0
	}
	v, _ := sumMatching(ss, "go_memstats_heap_alloc_bytes", nil)
	return v
}

// profile fetches CPU profiles of kube-apiserver and the operator for --profile-seconds,
// in the background; wait for the returned WaitGroup before stopping either.
func (b *bench) profile(ctx context.Context) *sync.WaitGroup {
	return b.profileAs(ctx, "", b.c.pprofURL != "")
}

// profileAs is profile with the files named kube-apiserver<suffix>.cpu.pprof (and
// operator<suffix>.cpu.pprof when withOperator): the floor's profile of the API server
// ("-floor") is the base the load's is compared with (go tool pprof -diff_base).
func (b *bench) profileAs(ctx context.Context, suffix string, withOperator bool) *sync.WaitGroup {
	var wg sync.WaitGroup
	s := b.c.profileSeconds
	if s <= 0 {
		return &wg
	}
	save := func(name string, get func() ([]byte, error)) {
		defer wg.Done()
		data, err := get()
		if err != nil {
			b.warn("%s CPU profile: %v", name, err)
			return
		}
		path := filepath.Join(b.workdir, name+suffix+".cpu.pprof")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			b.warn("write %s: %v", path, err)
			return
		}
		b.log.printf("profile: %s (%d bytes)", path, len(data))
	}
	wg.Add(1)
	go save("kube-apiserver", func() ([]byte, error) {
		return b.disc.RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", fmt.Sprint(s)).DoRaw(ctx)
	})
	if withOperator {
		url := strings.TrimSuffix(substituteTokens(b.c.pprofURL, b.mgr.tokens), "/") + fmt.Sprintf("/profile?seconds=%d", s)
		wg.Add(1)
		go save("operator", func() ([]byte, error) {
			resp, err := http.Get(url)
			if err != nil {
				return nil, err
			}
			defer func() { _ = resp.Body.Close() }()
			if resp.StatusCode != http.StatusOK {
				return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
			}
			return io.ReadAll(resp.Body)
		})
	}
	return &wg
}

// background creates the unrelated Secrets and ConfigMaps.
func (b *bench) background(ctx context.Context) error {
	c := b.c
	if c.bgSecrets == 0 && c.bgConfigMaps == 0 {
		return nil
	}
	cs, err := kubernetes.NewForConfig(protobufConfig(b.rest))
	if err != nil {
		return err
	}
	ns := c.nsPrefix + "-unrelated"
	if err := b.createNamespaces(ctx, []string{ns}); err != nil {
		return err
	}
	blob := make([]byte, c.bgSecretBytes)
	_, _ = rand.Read(blob) // random, so nothing along the way compresses it away
	d, nerr, first := runPool(ctx, c.bgSecrets, c.workers, func(ctx context.Context, i int) error {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("unrelated-%05d", i)}, Data: map[string][]byte{"blob": blob}}
		_, err := cs.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{})
		return err
	})
	if nerr > 0 {
		return fmt.Errorf("%d unrelated Secrets failed, e.g.: %s", nerr, strings.Join(first, "; "))
	}
	value := strings.Repeat("x", 1024)
	d2, nerr, first := runPool(ctx, c.bgConfigMaps, c.workers, func(ctx context.Context, i int) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("unrelated-%05d", i)}, Data: map[string]string{"v": value}}
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		return err
	})
	if nerr > 0 {
		return fmt.Errorf("%d unrelated ConfigMaps failed, e.g.: %s", nerr, strings.Join(first, "; "))
	}
	b.res.Memory.Background = fmt.Sprintf("%d Secrets of %d bytes, %d ConfigMaps in %s", c.bgSecrets, c.bgSecretBytes, c.bgConfigMaps, ns)
	b.log.printf("background: %s (%.1fs + %.1fs)", b.res.Memory.Background, d.Seconds(), d2.Seconds())
	return nil
}

// churnItem is one change of the churn phase.
type churnItem struct {
	at, childAt, statusAt time.Time
	gen                   int64
}

// churnRes is the churn phase's result.
type churnRes struct {
	Rate          float64 `json:"rate_per_s"`
	DurationS     float64 `json:"duration_s"`
	Changes       int     `json:"changes"`
	Errors        int     `json:"errors"`
	ChildLat      latency `json:"change_to_child"`
	StatusLat     latency `json:"change_to_status"`
	ChildMissing  int     `json:"child_not_updated"`
	StatusMissing int     `json:"status_not_observed"`
	Requests      opStats `json:"operator_requests"`
	CPUS          float64 `json:"operator_cpu_s"`
}

// churn patches --churn-rate CRs per second for --churn-duration, each CR at most once,
// and waits up to a minute for every change to reach its child and status.
func (b *bench) churn(ctx context.Context) error {
	c := b.c
	if c.churnRate <= 0 {
		return nil
	}
	slot := slices.Index(c.childFlags, c.churnChildFlag)
	total := min(int(c.churnRate*c.churnDuration.Seconds()), len(b.crs))
	b.log.printf("churn: %d changes at %.0f/s", total, c.churnRate)
	t := b.tr
	t.mu.Lock()
	t.churnSlot, t.churn = slot, map[int]*churnItem{}
	t.mu.Unlock()
	pre := b.snap()
	// A stride coprime to N visits the CRs spread over all namespaces, none twice.
	stride := 7919
	for len(b.crs)%stride == 0 {
		stride++
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	errs := 0
	tick := time.NewTicker(time.Duration(float64(time.Second) / c.churnRate))
	defer tick.Stop()
	for seq := 0; seq < total; seq++ {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		i := seq * stride % len(b.crs)
		u := b.crs[i]
		patch, err := renderString(c.churnPatch, tmplData{Name: u.GetName(), Namespace: u.GetNamespace(), Index: seq})
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			item := &churnItem{at: time.Now()}
			t.mu.Lock()
			t.churn[i] = item
			t.mu.Unlock()
			got, err := b.dyn.Resource(b.crGVR).Namespace(u.GetNamespace()).Patch(ctx, u.GetName(), types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			t.mu.Lock()
			defer t.mu.Unlock()
			if err != nil {
				delete(t.churn, i)
				mu.Lock()
				errs++
				mu.Unlock()
				return
			}
			item.gen = got.GetGeneration()
			// The status may have observed the change before the patch returned.
			t.churnStatus(i, t.crs[i].observedGen, time.Now())
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) && !t.churnDone() {
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	post := b.snap()
	r := &churnRes{Rate: c.churnRate, DurationS: round3(c.churnDuration.Seconds()), Changes: total, Errors: errs,
		Requests: delta(pre.op, post.op), CPUS: round3(post.proc.CPUSeconds - pre.proc.CPUSeconds)}
	var child, status []float64
	t.mu.Lock()
	for _, it := range t.churn {
		if it.childAt.IsZero() {
			r.ChildMissing++
		} else {
			child = append(child, it.childAt.Sub(it.at).Seconds())
		}
		if it.statusAt.IsZero() {
			r.StatusMissing++
		} else {
			status = append(status, it.statusAt.Sub(it.at).Seconds())
		}
	}
	t.churn = nil
	t.mu.Unlock()
	r.ChildLat, r.StatusLat = percentiles(child), percentiles(status)
	b.res.Churn = r
	b.log.printf("churn: change->child p99 %.2fs, change->status p99 %.2fs; %s", r.ChildLat.P99, r.StatusLat.P99, reqLine(r.Requests))
	return nil
}

// churnDone reports whether every change reached its child and status.
func (t *tracker) churnDone() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, it := range t.churn {
		if it.childAt.IsZero() || it.statusAt.IsZero() {
			return false
		}
	}
	return true
}

// churnChild records the first update of CR i's churn child after its change; caller
// holds mu.
func (t *tracker) churnChild(i, slot int, now time.Time) {
	if it := t.churn[i]; it != nil && slot == t.churnSlot && it.childAt.IsZero() {
		it.childAt = now
	}
}

// churnStatus records when CR i's status first observed its change's generation; caller
// holds mu.
func (t *tracker) churnStatus(i int, observed int64, now time.Time) {
	if it := t.churn[i]; it != nil && it.gen > 0 && observed >= it.gen && it.statusAt.IsZero() {
		it.statusAt = now
	}
}

func parseTemplateText(name, text string) (*template.Template, error) {
	t, err := template.New(name).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", name, err)
	}
	return t, nil
}

// protobufConfig is cfg speaking protobuf, as typed clients of built-in kinds do.
func protobufConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return cfg
}
