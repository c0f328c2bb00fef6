package clusterenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// mooringKinds are the lists whose status and conditions must never carry a secret: those
// of api/v1's Kinds.
var mooringKinds = func() []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for _, k := range mooringv1.Kinds() {
		gvk := k.GroupVersionKind()
		out = append(out, gvk.GroupVersion().WithKind(gvk.Kind+"List"))
	}
	return out
}()

// ExpectPassword declares that a test made Mooring generate a password into Secret
// ns/name, which stays until the package ends. CheckNoSecretsLeaked then fails unless that
// password is among those it looks for: a check that found no password (a changed label
// or key) would otherwise pass by looking for nothing.
func (e *Env) ExpectPassword(ns, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.expectedPasswords = append(e.expectedPasswords, client.ObjectKey{Namespace: ns, Name: name})
}

// CheckNoSecretsLeaked fails when a password Mooring generated (the "password" key of every
// Secret labelled managed-by=mooring) appears in any log of the Env (the operator's and
// every control-plane component's, the shared cluster's too), in any event, or in any Mooring object, and when a
// Secret declared with ExpectPassword is not among those searched. It returns how many
// passwords it looked for.
func (e *Env) CheckNoSecretsLeaked(ctx context.Context) (int, error) {
	secrets := &corev1.SecretList{}
	if err := e.Client.List(ctx, secrets, client.MatchingLabels{mooringv1.ManagedByLabel: mooringv1.ManagedBy}); err != nil {
		return 0, fmt.Errorf("list Secrets: %w", err)
	}
	var passwords [][]byte
	searched := map[client.ObjectKey]bool{}
	for _, s := range secrets.Items {
		if p := s.Data["password"]; len(p) >= 8 {
			passwords = append(passwords, p)
			searched[client.ObjectKeyFromObject(&s)] = true
		}
	}
	e.mu.Lock()
	expected := slices.Clone(e.expectedPasswords)
	e.mu.Unlock()
	for _, k := range expected {
		if !searched[k] {
			return len(passwords), fmt.Errorf("the tests made Mooring generate a password into Secret %s, but the leak check found no password there among %d Secrets labelled %s=%s: it would look for nothing",
				k, len(secrets.Items), mooringv1.ManagedByLabel, mooringv1.ManagedBy)
		}
	}
	if len(passwords) == 0 {
		return 0, nil
	}
	leak := func(where string, data []byte) error {
		for _, p := range passwords {
			if bytes.Contains(data, p) {
				return fmt.Errorf("a generated password appears in %s", where)
			}
		}
		return nil
	}
	for _, dir := range e.stateDirs() {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || filepath.Ext(path) != ".log" && filepath.Ext(path) != ".txt" {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return leak(path, data)
		})
		if err != nil {
			return len(passwords), err
		}
	}
	lists := []client.ObjectList{&eventsv1.EventList{}, &corev1.EventList{}}
	for _, gvk := range mooringKinds {
		u := &unstructured.UnstructuredList{}
		u.SetGroupVersionKind(gvk)
		lists = append(lists, u)
	}
	for _, l := range lists {
		if err := e.Client.List(ctx, l); err != nil {
			return len(passwords), fmt.Errorf("list %T: %w", l, err)
		}
		data, err := json.Marshal(l)
		if err != nil {
			return len(passwords), err
		}
		if err := leak(fmt.Sprintf("%T", l), data); err != nil {
			return len(passwords), err
		}
	}
	return len(passwords), nil
}
