package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
)

// thirdPartyAPIs are the API versions of other projects' CRDs the chart's options use:
// prometheus-operator's (metrics.serviceMonitor, metrics.prometheusRule) and
// cert-manager's (webhook.certManagement=cert-manager).
var thirdPartyAPIs = []string{"monitoring.coreos.com/v1", "cert-manager.io/v1"}

// render renders the chart in dir as `helm template --api-versions ...` would for an
// install into ns on a cluster that serves thirdPartyAPIs, with the schema checked, and
// returns the manifests in file order.
func render(dir, ns string, values map[string]any) (string, error) {
	return renderOn(dir, ns, values, thirdPartyAPIs...)
}

// renderOn renders as render does on a cluster that serves the built-in API versions
// and apiVersions.
func renderOn(dir, ns string, values map[string]any, apiVersions ...string) (string, error) {
	files, err := renderFiles(dir, ns, values, apiVersions...)
	if err != nil {
		return "", err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		if filepath.Ext(name) == ".yaml" && strings.TrimSpace(files[name]) != "" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", name, strings.TrimSpace(files[name]))
	}
	return b.String(), nil
}

// renderFiles renders every template of the chart in dir, NOTES.txt included, by path,
// on a cluster that serves the built-in API versions and apiVersions.
func renderFiles(dir, ns string, values map[string]any, apiVersions ...string) (map[string]string, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", dir, err)
	}
	caps := *common.DefaultCapabilities
	caps.APIVersions = append(slices.Clone(common.DefaultVersionSet), apiVersions...)
	vals, err := chartutil.ToRenderValues(ch, values, common.ReleaseOptions{Name: "mooring", Namespace: ns, IsInstall: true, Revision: 1}, &caps)
	if err != nil {
		return nil, err
	}
	return engine.Render(ch, vals)
}
