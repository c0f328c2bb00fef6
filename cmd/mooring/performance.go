package main

import (
	"flag"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
)

// performanceFlags are the knobs that matter at fleet scale (docs/performance.md).
type performanceFlags struct {
	pprofAddr string
	qps       float64
	burst     int
	memRatio  float64
}

func bindPerformanceFlags(fs *flag.FlagSet) *performanceFlags {
	p := &performanceFlags{}
	fs.StringVar(&p.pprofAddr, "pprof-bind-address", "0", "Address /debug/pprof binds to, e.g. 127.0.0.1:6060; \"0\" disables it. Keep it off a public interface.")
	fs.Float64Var(&p.qps, "kube-api-qps", -1, "Client-side limit of API requests per second; negative leaves limiting to the API server's priority and fairness (controller-runtime's default).")
	fs.IntVar(&p.burst, "kube-api-burst", 0, "Client-side burst of API requests above --kube-api-qps; 0 keeps client-go's default.")
	fs.Float64Var(&p.memRatio, "memory-limit-ratio", 0.9, "Unless GOMEMLIMIT is set, the Go memory limit as a share of the container's memory limit (the cgroup's, or MOORING_MEMORY_LIMIT in bytes when smaller; 0 disables), so the garbage collector works harder before the kernel kills the process and RSS stays near the live heap.")
	return p
}

// restConfig applies the client rate limits to cfg.
func (p *performanceFlags) restConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	if p.qps != 0 {
		cfg.QPS = float32(p.qps)
	}
	if p.burst > 0 {
		cfg.Burst = p.burst
	}
	return cfg
}

// memoryLimitEnv is where the chart puts the container's memory limit (the downward API's
// resourceFieldRef limits.memory, in bytes): the limit where the cgroup's files are not
// mounted, or are not the container's own.
const memoryLimitEnv = "MOORING_MEMORY_LIMIT"

// apply sets the Go memory limit from the container's memory limit when GOMEMLIMIT does
// not: without it the heap grows to twice the live heap before a collection, and the
// RSS with it.
func (p *performanceFlags) apply(log logr.Logger) {
	goLimit, limit, ok := goMemoryLimit(os.Getenv, "/sys/fs/cgroup", p.memRatio)
	if !ok {
		return
	}
	debug.SetMemoryLimit(goLimit)
	log.Info("Set Go memory limit from the container's memory limit", "memoryLimitBytes", limit, "goMemoryLimitBytes", goLimit)
}

// goMemoryLimit is the Go memory limit for a container of memory limit limit (the smaller
// of the cgroup's, under cgroupRoot, and memoryLimitEnv's) times ratio; ok is false when
// GOMEMLIMIT is set, ratio is not positive or no limit is known.
func goMemoryLimit(getenv func(string) string, cgroupRoot string, ratio float64) (goLimit, limit int64, ok bool) {
	if getenv("GOMEMLIMIT") != "" || ratio <= 0 {
		return 0, 0, false
	}
	limit, ok = cgroupMemoryLimit(cgroupRoot)
	if v, err := strconv.ParseInt(strings.TrimSpace(getenv(memoryLimitEnv)), 10, 64); err == nil && v > 0 && (!ok || v < limit) {
		limit, ok = v, true
	}
	if !ok {
		return 0, 0, false
	}
	return int64(float64(limit) * min(ratio, 1)), limit, true
}

// cgroupMemoryLimit reads the memory limit of cgroup v2 (or v1) under root; ok is false
// without one.
func cgroupMemoryLimit(root string) (int64, bool) {
	for _, path := range []string{filepath.Join(root, "memory.max"), filepath.Join(root, "memory", "memory.limit_in_bytes")} {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		// "max" (v2) fails to parse; v1 reports a huge number when there is no limit.
		if err != nil || v <= 0 || v >= 1<<60 {
			return 0, false
		}
		return v, true
	}
	return 0, false
}
