// Command dashboards writes Mooring's Grafana dashboards, built in internal/dashboards, to
// config/grafana (or the directory given as the first argument). `make dashboards` runs it;
// test/monitoring fails when the committed files differ from its output.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/mooringhq/mooring/internal/dashboards"
)

func main() {
	dir := filepath.Join("config", "grafana")
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := write(dir); err != nil {
		fmt.Fprintln(os.Stderr, "dashboards:", err)
		os.Exit(1)
	}
}

func write(dir string) error {
	for _, f := range dashboards.Files {
		d, err := f.Build()
		if err != nil {
			return fmt.Errorf("build %s: %w", f.Name, err)
		}
		out, err := dashboards.JSON(d)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f.Name), out, 0o644); err != nil {
			return err
		}
	}
	return nil
}
