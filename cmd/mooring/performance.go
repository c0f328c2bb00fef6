package main

import (
	"flag"
	"os"
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
	fs.Float64Var(&p.memRatio, "memory-limit-ratio", 0.9, "Unless GOMEMLIMIT is set, the Go memory limit as a share of the container's cgroup memory limit (0 disables), so the garbage collector works harder before the kernel kills the process.")
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

// apply sets the Go memory limit from the cgroup limit when GOMEMLIMIT does not.
func (p *performanceFlags) apply(log logr.Logger) {
	if os.Getenv("GOMEMLIMIT") != "" || p.memRatio <= 0 {
		return
	}
	limit, ok := cgroupMemoryLimit()
	if !ok {
		return
	}
	goLimit := int64(float64(limit) * p.memRatio)
	debug.SetMemoryLimit(goLimit)
	log.Info("Set Go memory limit from the cgroup", "cgroupLimitBytes", limit, "goMemoryLimitBytes", goLimit)
}

// cgroupMemoryLimit reads the memory limit of cgroup v2 (or v1); ok is false without one.
func cgroupMemoryLimit() (int64, bool) {
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
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
