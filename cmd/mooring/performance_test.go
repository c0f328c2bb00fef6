package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestGoMemoryLimit(t *testing.T) {
	const mib = 1 << 20
	tests := map[string]struct {
		cgroupV2, cgroupV1 string // file contents; "" writes no file
		env                map[string]string
		ratio              float64
		wantGo, wantLimit  int64
		wantOK             bool
	}{
		"cgroup v2 limit":           {cgroupV2: "536870912\n", ratio: 0.9, wantGo: 483183820, wantLimit: 512 * mib, wantOK: true},
		"cgroup v2 without a limit": {cgroupV2: "max\n", ratio: 0.9},
		"cgroup v1 limit":           {cgroupV1: "268435456", ratio: 0.5, wantGo: 128 * mib, wantLimit: 256 * mib, wantOK: true},
		"cgroup v1 unlimited":       {cgroupV1: "9223372036854771712", ratio: 0.9},
		"downward API only":         {env: map[string]string{memoryLimitEnv: "536870912"}, ratio: 0.75, wantGo: 384 * mib, wantLimit: 512 * mib, wantOK: true},
		"smaller of cgroup and env": {cgroupV2: "1073741824", env: map[string]string{memoryLimitEnv: "536870912"}, ratio: 1, wantGo: 512 * mib, wantLimit: 512 * mib, wantOK: true},
		"GOMEMLIMIT wins":           {cgroupV2: "536870912", env: map[string]string{"GOMEMLIMIT": "100MiB"}, ratio: 0.9},
		"ratio 0 disables":          {cgroupV2: "536870912", ratio: 0},
		"ratio above 1 is 1":        {cgroupV2: "536870912", ratio: 3, wantGo: 512 * mib, wantLimit: 512 * mib, wantOK: true},
		"garbage in the env":        {env: map[string]string{memoryLimitEnv: "512Mi"}, ratio: 0.9},
		"nothing known":             {ratio: 0.9},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			if tc.cgroupV2 != "" {
				write(t, filepath.Join(root, "memory.max"), tc.cgroupV2)
			}
			if tc.cgroupV1 != "" {
				write(t, filepath.Join(root, "memory", "memory.limit_in_bytes"), tc.cgroupV1)
			}
			goLimit, limit, ok := goMemoryLimit(func(k string) string { return tc.env[k] }, root, tc.ratio)
			if goLimit != tc.wantGo || limit != tc.wantLimit || ok != tc.wantOK {
				t.Errorf("goMemoryLimit = %d, %d, %v; want %d, %d, %v", goLimit, limit, ok, tc.wantGo, tc.wantLimit, tc.wantOK)
			}
		})
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
