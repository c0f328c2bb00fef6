package webhook

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
)

// caTarget is one object whose CA bundle Mooring keeps current, and where in it the
// bundles live.
type caTarget struct {
	resource schema.GroupVersionResource
	name     string
	// bundles returns the maps inside obj that hold a caBundle field, or an error
	// naming what is malformed.
	bundles func(obj map[string]any) ([]map[string]any, error)
}

// caTargets are the objects the rotator injects its CA into (see AddCertRotation).
var caTargets = []caTarget{
	{schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"},
		MutatingConfigName, webhookClientConfigs},
	{schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"},
		ValidatingConfigName, webhookClientConfigs},
	{schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"},
		ConversionCRDName, conversionClientConfig},
}

// webhookClientConfigs returns the clientConfig of every webhook in a webhook
// configuration.
func webhookClientConfigs(obj map[string]any) ([]map[string]any, error) {
	hooks, _ := obj["webhooks"].([]any)
	out := make([]map[string]any, 0, len(hooks))
	for i, h := range hooks {
		hook, ok := h.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("webhooks[%d] is not an object", i)
		}
		cc, ok := hook["clientConfig"].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("webhooks[%d] has no clientConfig", i)
		}
		out = append(out, cc)
	}
	return out, nil
}

// conversionClientConfig returns the CRD's conversion webhook clientConfig, or none when
// the CRD does not convert by webhook (the rotator reports that itself).
func conversionClientConfig(obj map[string]any) ([]map[string]any, error) {
	m := obj
	for _, field := range []string{"spec", "conversion", "webhook", "clientConfig"} {
		next, ok := m[field].(map[string]any)
		if !ok {
			return nil, nil
		}
		m = next
	}
	return []map[string]any{m}, nil
}

// injectStoredCA writes the CA the certificate Secret holds into every target that does
// not carry it yet, read and written directly before the manager starts.
//
// Why not leave this to the rotator: its reconciler updates each target at the
// resourceVersion its cache holds, and is triggered again by the events of its own
// writes, so on a fresh install a second pass could run before the cache had seen the
// first and log "Error updating webhook with certificate ... the object has been
// modified" (seen in CI in TestSelfManagedCertificates). With the CA already in place,
// its updates change nothing and raise no events. A target that already carries the CA
// costs one read and no write, so restarts stay write-free.
func injectStoredCA(cfg *rest.Config, key types.NamespacedName) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("inject the webhook CA: %w", err)
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("inject the webhook CA: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), secretCreateTimeout)
	defer cancel()
	s, err := cs.CoreV1().Secrets(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read the webhook certificate Secret %s: %w", key, err)
	}
	ca := s.Data["ca.crt"]
	if len(ca) == 0 {
		return nil // the rotator issues one and injects it
	}
	encoded := base64.StdEncoding.EncodeToString(ca)
	log := ctrl.Log.WithName("cert-rotation")
	for _, t := range caTargets {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			obj, err := dc.Resource(t.resource).Get(ctx, t.name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			configs, err := t.bundles(obj.Object)
			if err != nil {
				return err
			}
			changed := false
			for _, cc := range configs {
				if current, _ := cc["caBundle"].(string); !sameCA(current, ca) {
					cc["caBundle"] = encoded
					changed = true
				}
			}
			if !changed {
				return nil
			}
			if _, err := dc.Resource(t.resource).Update(ctx, obj, metav1.UpdateOptions{FieldManager: "mooring"}); err != nil {
				return err
			}
			log.Info("Injected the webhook CA", "resource", t.resource.Resource, "name", t.name)
			return nil
		})
		switch {
		case apierrors.IsNotFound(err):
			// Not installed (yet): the rotator injects the CA when it appears.
		case err != nil:
			return fmt.Errorf("inject the webhook CA into %s %s: %w", t.resource.Resource, t.name, err)
		}
	}
	return nil
}

// sameCA reports whether a base64 caBundle field holds exactly ca.
func sameCA(field string, ca []byte) bool {
	got, err := base64.StdEncoding.DecodeString(field)
	return err == nil && bytes.Equal(got, ca)
}
