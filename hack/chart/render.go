package main

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
)

// render renders the chart in dir as `helm template` would for an install into ns, with
// the schema checked, and returns the manifests in file order.
func render(dir, ns string, values map[string]any) (string, error) {
	files, err := renderFiles(dir, ns, values)
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

// renderFiles renders every template of the chart in dir, NOTES.txt included, by path.
func renderFiles(dir, ns string, values map[string]any) (map[string]string, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", dir, err)
	}
	vals, err := chartutil.ToRenderValues(ch, values, common.ReleaseOptions{Name: "mooring", Namespace: ns, IsInstall: true, Revision: 1}, nil)
	if err != nil {
		return nil, err
	}
	return engine.Render(ch, vals)
}
