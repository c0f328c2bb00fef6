// Command openapi writes the portal's served OpenAPI document,
// internal/portal/openapi/zz_generated.openapi.json, from openapi.yaml and the kinds'
// CRDs in config/crd/bases (see openapi.Build). Run from anywhere in the repository:
// `go generate ./internal/portal/openapi` or `go run ./hack/openapi`; with an argument it
// writes there instead (hack/verify-generated.sh compares).
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/portal/openapi"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "openapi:", err)
		os.Exit(1)
	}
}

func run() error {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return fmt.Errorf("find the module's directory: %w", err)
	}
	root := strings.TrimSpace(string(out))
	dir := filepath.Join(root, "internal", "portal", "openapi")
	source, err := os.ReadFile(filepath.Join(dir, "openapi.yaml"))
	if err != nil {
		return err
	}
	crds := map[string][]byte{}
	for _, k := range mooringv1.Kinds() {
		data, err := os.ReadFile(filepath.Join(root, "config", "crd", "bases", openapi.CRDFile(k)))
		if err != nil {
			return err
		}
		crds[openapi.CRDFile(k)] = data
	}
	doc, err := openapi.Build(source, crds)
	if err != nil {
		return err
	}
	dest := filepath.Join(dir, openapi.GeneratedFile)
	if len(os.Args) > 1 {
		dest = os.Args[1]
	}
	return os.WriteFile(dest, doc, 0o644)
}
