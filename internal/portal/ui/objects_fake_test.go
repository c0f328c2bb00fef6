package ui

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mooringhq/mooring/internal/objecttree"
	"github.com/mooringhq/mooring/internal/portal/services"
)

// fakeObjects serves trees and logs from memory and the events of fakeResources; a user
// in noLogs gets the API server's 403 for pods/log.
type fakeObjects struct {
	res    *fakeResources
	mu     sync.Mutex
	trees  map[string]*objecttree.Node // by "ns/Kind/name"
	logs   map[string]string           // by "ns/pod"
	noLogs map[string]bool             // user names
	// logErrs are the errors of log reads, by "ns/pod".
	logErrs map[string]error
	// read are the pods whose logs were read, "ns/pod".
	read []string
	// calls counts every call.
	calls int
}

func (f *fakeObjects) Tree(_ context.Context, _ *services.Caller, ns, kind, name string) (*objecttree.Node, []string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return f.trees[ns+"/"+kind+"/"+name], nil, nil
}

func (f *fakeObjects) Events(_ context.Context, _ *services.Caller, _, kind, name string) ([]corev1.Event, error) {
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	f.res.mu.Lock()
	defer f.res.mu.Unlock()
	var out []corev1.Event
	for _, e := range f.res.events {
		if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name {
			out = append(out, e)
		}
	}
	return out, nil
}

func (f *fakeObjects) Log(_ context.Context, c *services.Caller, ns, pod string, _ int64) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.read = append(f.read, ns+"/"+pod)
	if f.noLogs[c.User.Spec.Username] {
		return "", apierrors.NewForbidden(schema.GroupResource{Resource: "pods/log"}, pod, nil)
	}
	if err := f.logErrs[ns+"/"+pod]; err != nil {
		return "", err
	}
	return f.logs[ns+"/"+pod], nil
}
