package devenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/internal/webhook"
)

// scheme knows the built-in kinds and CustomResourceDefinitions.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	return s
}()

// FieldOwner is the field manager of what devenv installs.
const FieldOwner = "mooring-dev"

// Namespace holds the webhook certificate Secret, as mooring-system does in production.
const Namespace = "mooring-system"

// SecretName is the Secret that keeps the webhook CA and serving certificate (the
// operator's --webhook-secret-name default).
const SecretName = "mooring-webhook-server-cert"

// Install applies the CRDs of <root>/config/crd/bases and the webhook configurations of
// <root>/config/webhook, rewritten to call https://localhost:<webhookPort>, and waits
// until the CRDs are established. It is idempotent.
func Install(ctx context.Context, cfg *rest.Config, root string, webhookPort int) error {
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	base := "https://localhost:" + strconv.Itoa(webhookPort)
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": Namespace}}}
	if err := apply(ctx, c, ns); err != nil {
		return err
	}
	// The operator creates its certificate Secret (SecretName) in this namespace when it
	// starts and the Secret is missing; the certificates of an earlier run survive in it.

	crds, err := readDocs(filepath.Join(root, "config", "crd", "bases"))
	if err != nil {
		return err
	}
	for _, crd := range crds {
		if crd.GetName() == webhook.ConversionCRDName {
			if err := pointConversionAtHost(ctx, c, crd.GetName(), base+"/convert"); err != nil {
				return err
			}
			// The served versions differ in shape: the API server converts through us.
			conversion := map[string]any{
				"strategy": "Webhook",
				"webhook": map[string]any{
					"conversionReviewVersions": []any{"v1"},
					"clientConfig":             map[string]any{"url": base + "/convert"},
				},
			}
			if err := unstructured.SetNestedField(crd.Object, conversion, "spec", "conversion"); err != nil {
				return err
			}
		}
		if err := apply(ctx, c, crd); err != nil {
			return err
		}
	}

	hooks, err := readDocs(filepath.Join(root, "config", "webhook"))
	if err != nil {
		return err
	}
	for _, h := range hooks {
		if k := h.GetKind(); k != "MutatingWebhookConfiguration" && k != "ValidatingWebhookConfiguration" {
			continue // the Service and Secret there are for in-cluster deployments
		}
		if err := pointAtHost(h, base); err != nil {
			return err
		}
		if err := apply(ctx, c, h); err != nil {
			return err
		}
	}
	return waitEstablished(ctx, c, crds)
}

// pointConversionAtHost makes an existing CRD that converts through a Service (the
// chart's, left by `helm uninstall` with crds.keep) call url instead. Applying the URL
// alone would leave the Service beside it, which the API server refuses ("exactly one of
// url or service is required"); a merge patch replaces one with the other.
func pointConversionAtHost(ctx context.Context, c client.Client, name, url string) error {
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("get CRD %s: %w", name, err)
	}
	if _, found, _ := unstructured.NestedMap(crd.Object, "spec", "conversion", "webhook", "clientConfig", "service"); !found {
		return nil
	}
	patch := fmt.Sprintf(`{"spec":{"conversion":{"webhook":{"clientConfig":{"service":null,"url":%q}}}}}`, url)
	if err := c.Patch(ctx, crd, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("point CRD %s's conversion at %s: %w", name, url, err)
	}
	return nil
}

// pointAtHost renames a generated webhook configuration as config/default does and swaps
// its Service clientConfig for a URL on this host.
func pointAtHost(u *unstructured.Unstructured, base string) error {
	switch u.GetKind() {
	case "MutatingWebhookConfiguration":
		u.SetName(webhook.MutatingConfigName)
	case "ValidatingWebhookConfiguration":
		u.SetName(webhook.ValidatingConfigName)
	default:
		return fmt.Errorf("unexpected %s in config/webhook", u.GetKind())
	}
	hooks, _, err := unstructured.NestedSlice(u.Object, "webhooks")
	if err != nil {
		return err
	}
	for i := range hooks {
		h := hooks[i].(map[string]any)
		path, _, _ := unstructured.NestedString(h, "clientConfig", "service", "path")
		h["clientConfig"] = map[string]any{"url": base + path}
	}
	return unstructured.SetNestedSlice(u.Object, hooks, "webhooks")
}

func apply(ctx context.Context, c client.Client, u *unstructured.Unstructured) error {
	u.SetManagedFields(nil)
	u.SetResourceVersion("")
	err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership)
	if err != nil {
		return fmt.Errorf("apply %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}

// readDocs reads every YAML document of the .yaml files in dir (kustomization files aside).
func readDocs(dir string) ([]*unstructured.Unstructured, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		docs, err := readDocsFrom(string(data))
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", f, err)
		}
		out = append(out, docs...)
	}
	return out, nil
}

// readDocsFrom decodes every YAML document of a multi-document text.
func readDocsFrom(text string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(text)), 4096)
	for {
		obj := map[string]any{}
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(obj) > 0 {
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
}

func waitEstablished(ctx context.Context, c client.Client, crds []*unstructured.Unstructured) error {
	for _, u := range crds {
		err := pollUntil(ctx, func() (bool, error) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: u.GetName()}, crd); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not established: %w", u.GetName(), err)
		}
	}
	return nil
}

// InstanceManagerImage is the image mooring-dev makes of bin/mooring for the real node,
// from which database pods copy their instance manager.
const InstanceManagerImage = "mooring.local/mooring:dev"

// OperatorArgs are the flags that make the operator serve the webhooks Install points at:
// on 127.0.0.1:<port>, with a certificate for "localhost" kept in <stateDir>/webhook-certs
// and in a Secret in mooring-system, whose CA the operator injects.
func OperatorArgs(stateDir string, webhookPort int) []string {
	return []string{
		"--webhook-host", "127.0.0.1",
		"--webhook-port", strconv.Itoa(webhookPort),
		"--webhook-cert-dir", filepath.Join(stateDir, "webhook-certs"),
		"--webhook-dns-name", "localhost",
		"--webhook-secret-namespace", Namespace,
		"--webhook-cert-write",
		"--instance-manager-image", InstanceManagerImage,
	}
}

// WebhooksReady reports whether the API server can call the webhooks: the CA has been
// injected into every webhook configuration and into the conversion settings.
func WebhooksReady(ctx context.Context, cfg *rest.Config) error {
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	mut := &admissionv1.MutatingWebhookConfiguration{}
	if err := c.Get(ctx, client.ObjectKey{Name: webhook.MutatingConfigName}, mut); err != nil {
		return err
	}
	for _, h := range mut.Webhooks {
		if len(h.ClientConfig.CABundle) == 0 {
			return fmt.Errorf("no CA bundle in %s yet", mut.Name)
		}
	}
	val := &admissionv1.ValidatingWebhookConfiguration{}
	if err := c.Get(ctx, client.ObjectKey{Name: webhook.ValidatingConfigName}, val); err != nil {
		return err
	}
	for _, h := range val.Webhooks {
		if len(h.ClientConfig.CABundle) == 0 {
			return fmt.Errorf("no CA bundle in %s yet", val.Name)
		}
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: webhook.ConversionCRDName}, crd); err != nil {
		return err
	}
	if cv := crd.Spec.Conversion; cv == nil || cv.Webhook == nil || cv.Webhook.ClientConfig == nil || len(cv.Webhook.ClientConfig.CABundle) == 0 {
		return fmt.Errorf("no CA bundle in the conversion settings of %s yet", crd.Name)
	}
	return nil
}
