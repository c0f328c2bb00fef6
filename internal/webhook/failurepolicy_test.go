package webhook_test

import (
	"os"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"
)

// Deletes of DatabaseClusters reach the validating webhook through an entry of their own
// that fails open, so that a cluster, and the namespace holding it, can be deleted while
// the operator is down or uninstalled; creates and updates still fail closed, as an
// invalid spec must never get past a missing webhook.
func TestDatabaseClusterDeletesFailOpen(t *testing.T) {
	data, err := os.ReadFile("../../config/webhook/manifests.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var validating *admissionregistrationv1.ValidatingWebhookConfiguration
	for _, doc := range splitYAML(data) {
		v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := yaml.Unmarshal(doc, v); err == nil && v.Kind == "ValidatingWebhookConfiguration" {
			validating = v
		}
	}
	if validating == nil {
		t.Fatal("no ValidatingWebhookConfiguration in config/webhook/manifests.yaml")
	}
	policies := map[admissionregistrationv1.OperationType]admissionregistrationv1.FailurePolicyType{}
	for _, w := range validating.Webhooks {
		for _, r := range w.Rules {
			if len(r.Resources) != 1 || r.Resources[0] != "databaseclusters" {
				continue
			}
			for _, op := range r.Operations {
				if _, dup := policies[op]; dup {
					t.Errorf("two validating webhooks take %s of databaseclusters", op)
				}
				if w.FailurePolicy == nil {
					t.Fatalf("webhook %s sets no failurePolicy", w.Name)
				}
				policies[op] = *w.FailurePolicy
			}
		}
	}
	want := map[admissionregistrationv1.OperationType]admissionregistrationv1.FailurePolicyType{
		admissionregistrationv1.Create: admissionregistrationv1.Fail,
		admissionregistrationv1.Update: admissionregistrationv1.Fail,
		admissionregistrationv1.Delete: admissionregistrationv1.Ignore,
	}
	for op, p := range want {
		if policies[op] != p {
			t.Errorf("%s of databaseclusters: failurePolicy %q, want %q", op, policies[op], p)
		}
	}
}

// splitYAML splits a multi-document YAML file at its "---" lines.
func splitYAML(data []byte) [][]byte {
	var docs [][]byte
	start := 0
	for i := 0; i+4 <= len(data); i++ {
		if (i == 0 || data[i-1] == '\n') && string(data[i:i+4]) == "---\n" {
			if i > start {
				docs = append(docs, data[start:i])
			}
			start = i + 4
		}
	}
	return append(docs, data[start:])
}
