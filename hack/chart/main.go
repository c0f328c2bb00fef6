// Command chart keeps the Helm chart in charts/mooring in step with config/ and packages
// it.
//
//	go run ./hack/chart generate   # rewrite charts/mooring/templates/generated from kustomize
//	go run ./hack/chart package    # bin/mooring-<version>.tgz
//	go run ./hack/chart crds       # other projects' CRDs for the tests (thirdparty.go)
//
// Everything config/default installs except the Namespace (helm install --namespace) and
// the operator's Deployment and PDB (hand-written templates, because most values shape
// them) is generated from `kubectl kustomize config/default`: CRDs, RBAC, the webhook
// configurations, Service and Secret. The optional parts are generated the same way, each
// behind its values (sources.go): config/prometheus (metrics.serviceMonitor,
// metrics.prometheusRule), config/grafana (metrics.dashboards) and config/portal
// (portal). The tests of this package fail when the generated files are stale or when a
// render differs from kustomize's output.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"helm.sh/helm/v4/pkg/action"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: chart generate|package|crds")
		os.Exit(2)
	}
	root, err := filepath.Abs(".")
	if err == nil {
		err = runCommand(root, os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chart:", err)
		os.Exit(1)
	}
}

func runCommand(root, cmd string) error {
	switch cmd {
	case "generate":
		files, err := generate(root)
		if err != nil {
			return err
		}
		return writeGenerated(root, files)
	case "crds":
		return generateThirdPartyCRDs(root)
	case "package":
		p := action.NewPackage()
		p.Destination = filepath.Join(root, "bin")
		if err := os.MkdirAll(p.Destination, 0o755); err != nil {
			return err
		}
		out, err := p.Run(filepath.Join(root, chartDir), nil)
		if err != nil {
			return fmt.Errorf("package: %w", err)
		}
		fmt.Println("chart:", out)
		return nil
	}
	return fmt.Errorf("unknown command %q", cmd)
}
