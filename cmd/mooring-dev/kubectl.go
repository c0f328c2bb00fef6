package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// kubectl runs bin/k8s/kubectl against the development cluster.
type kubectl struct {
	path       string
	kubeconfig string // empty: kubectl's own KUBECONFIG handling (external cluster)
	cacheDir   string // discovery cache in the state dir, not ~/.kube/cache per port
	stdout     io.Writer
	stderr     io.Writer
}

func (k kubectl) run(ctx context.Context, args ...string) error {
	var full []string
	if k.kubeconfig != "" {
		full = append(full, "--kubeconfig", k.kubeconfig)
	}
	full = append(full, "--cache-dir", k.cacheDir)
	full = append(full, args...)
	cmd := exec.CommandContext(ctx, k.path, full...)
	cmd.Stdout, cmd.Stderr = k.stdout, k.stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kubectl %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// manifestArgs selects -k for a kustomization directory (kubebuilder scaffolds one in
// config/samples, which "-f dir" would read as a broken object) and -f otherwise.
func manifestArgs(dir string) []string {
	for _, name := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return []string{"-k", dir}
		}
	}
	return []string{"-f", dir}
}

// hasManifests reports whether dir holds at least one YAML or JSON file.
func hasManifests(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		switch filepath.Ext(e.Name()) {
		case ".yaml", ".yml", ".json":
			return true
		}
	}
	return false
}
