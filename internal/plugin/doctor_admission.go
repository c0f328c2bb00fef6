package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/config/samples"
)

const fixWebhookCall = "a \"failed calling webhook\" error means the API server cannot reach the operator: see the webhook checks above"

// checkSamples creates each sample of config/samples with a server-side dry-run, so it
// goes through the mutating and validating webhooks (and conversion for v1alpha1) and
// nothing is stored; then checks that the validating webhook rejects an invalid Backup.
func checkSamples(ctx context.Context, env *doctorEnv) []Finding {
	objs, err := sampleObjects()
	if err != nil {
		return []Finding{fail("samples", "", "read the embedded samples: %v", err)}
	}
	var out []Finding
	for _, s := range objs {
		check := fmt.Sprintf("dry-run %s %s", s.GetAPIVersion(), s.GetKind())
		u := dryRunCopy(s, env.namespace)
		if err := env.c.Create(ctx, u, client.DryRunAll); err != nil {
			out = append(out, fail(check, fixWebhookCall, "sample %s rejected: %v", s.GetName(), err))
			continue
		}
		out = append(out, pass(check, "sample %s admitted in namespace %s", s.GetName(), env.namespace))
	}

	// The schema cannot check a cron expression; only the validating webhook can.
	const check = "dry-run invalid Backup"
	bad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "mooring.dev/v1", "kind": "Backup",
		"metadata": map[string]any{"generateName": "mooring-doctor-", "namespace": env.namespace},
		"spec":     map[string]any{"databaseRef": map[string]any{"name": "orders"}, "schedule": "every day at noon"},
	}}
	err = env.c.Create(ctx, bad, client.DryRunAll)
	switch {
	case err == nil:
		out = append(out, fail(check, "check that "+ValidatingConfigName+" has a rule for backups", "a Backup with schedule \"every day at noon\" was admitted: the validating webhook is not called"))
	case strings.Contains(err.Error(), "spec.schedule"):
		out = append(out, pass(check, "rejected by the validating webhook, naming spec.schedule"))
	default:
		out = append(out, fail(check, fixWebhookCall, "rejected, but not by the validating webhook: %v", err))
	}
	return out
}

// dryRunCopy is a sample ready to be dry-run created: in ns, with a random name so that it
// never collides with a real object. Not generateName: the mutating webhook runs before
// the API server generates the name, and it derives names (the credentials Secret's)
// from it.
func dryRunCopy(s *unstructured.Unstructured, ns string) *unstructured.Unstructured {
	u := s.DeepCopy()
	u.SetNamespace(ns)
	u.SetGenerateName("")
	u.SetName("mooring-doctor-" + utilrand.String(5))
	return u
}

// sampleObjects decodes the embedded samples, in file name order.
func sampleObjects() ([]*unstructured.Unstructured, error) {
	names, err := fs.Glob(samples.FS, "*.yaml")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []*unstructured.Unstructured
	for _, name := range names {
		data, err := samples.FS.ReadFile(name)
		if err != nil {
			return nil, err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			obj := map[string]any{}
			if err := dec.Decode(&obj); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if len(obj) > 0 {
				out = append(out, &unstructured.Unstructured{Object: obj})
			}
		}
	}
	return out, nil
}

// checkConversion round-trips a DatabaseCluster through the conversion webhook: the
// v1alpha1 sample is dry-run created (converted to the stored v1beta1 for admission and
// storage, and back to v1alpha1 for the answer) and must come back unchanged; then the
// stored DatabaseClusters are listed as v1alpha1, which converts each of them.
func checkConversion(ctx context.Context, env *doctorEnv) []Finding {
	const check = "conversion round trip"
	objs, err := sampleObjects()
	if err != nil {
		return []Finding{fail(check, "", "read the embedded samples: %v", err)}
	}
	var sent *unstructured.Unstructured
	for _, o := range objs {
		if o.GetAPIVersion() == "mooring.dev/v1alpha1" && o.GetKind() == "DatabaseCluster" {
			sent = dryRunCopy(o, env.namespace)
		}
	}
	if sent == nil {
		return []Finding{fail(check, "", "no v1alpha1 DatabaseCluster among the samples")}
	}
	got := sent.DeepCopy()
	if err := env.c.Create(ctx, got, client.DryRunAll); err != nil {
		return []Finding{fail(check, fixWebhookCall, "v1alpha1 DatabaseCluster: %v", err)}
	}
	for _, field := range [][]string{{"spec", "engine"}, {"spec", "replicas"}} {
		want, _, _ := unstructured.NestedFieldNoCopy(sent.Object, field...)
		have, _, _ := unstructured.NestedFieldNoCopy(got.Object, field...)
		if fmt.Sprint(want) != fmt.Sprint(have) {
			return []Finding{fail(check, "the conversion webhook loses data: report a bug with `kubectl mooring version`",
				"v1alpha1 → v1beta1 → v1alpha1 changed %s from %v to %v", strings.Join(field, "."), want, have)}
		}
	}
	if v, _, _ := unstructured.NestedString(got.Object, "spec", "version"); v == "" {
		return []Finding{fail(check, "check the mutating webhook for databaseclusters", "the converted DatabaseCluster came back without the defaulted spec.version")}
	}
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("mooring.dev/v1alpha1")
	list.SetKind("DatabaseClusterList")
	if err := env.c.List(ctx, list); err != nil {
		return []Finding{fail(check, fixWebhookCall, "list DatabaseClusters as v1alpha1: %v", err)}
	}
	return []Finding{pass(check, "v1alpha1 → v1beta1 → v1alpha1 kept spec.engine and spec.replicas; %d stored DatabaseClusters read as v1alpha1", len(list.Items))}
}
