package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
)

// Revocation is how long a revocation written by another replica took to end a
// session on the measured portal, whose authentication reads Users from a watch-fed
// cache: the watch's delay, the time a revoked access token still works there.
type Revocation struct {
	// Users were revoked, one after the other, after the latency measurement.
	Users int `json:"users"`
	// P50Ms and MaxMs: from the status write's answer to the portal's first 401.
	P50Ms float64 `json:"p50Ms"`
	MaxMs float64 `json:"maxMs"`
}

// revocationDeadline bounds the wait for one revocation to reach the portal.
const revocationDeadline = 10 * time.Second

// measureRevocation revokes each user's tokens as another replica would (the User's
// token generation up by one, its sessions cleared, in one status write made with the
// admin's client, not through this portal) and polls the portal with the user's
// access token until it answers 401.
func measureRevocation(ctx context.Context, admin client.Client, pc *portalClient) (Revocation, error) {
	var delays []time.Duration
	for _, u := range pc.users {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(portalv1alpha1.GroupVersion.WithKind("User"))
		if err := admin.Get(ctx, client.ObjectKey{Name: u.name}, obj); err != nil {
			return Revocation{}, fmt.Errorf("read User %s: %w", u.name, err)
		}
		gen, _, _ := unstructured.NestedInt64(obj.Object, "status", "tokenGeneration")
		if err := unstructured.SetNestedField(obj.Object, gen+1, "status", "tokenGeneration"); err != nil {
			return Revocation{}, err
		}
		unstructured.RemoveNestedField(obj.Object, "status", "sessions")
		if err := admin.Status().Update(ctx, obj); err != nil {
			return Revocation{}, fmt.Errorf("revoke the tokens of %s: %w", u.name, err)
		}
		written := time.Now()
		for {
			code, err := pc.status(ctx, "/api/v1/users/me", u.token)
			if err != nil {
				return Revocation{}, err
			}
			if code == http.StatusUnauthorized {
				delays = append(delays, time.Since(written))
				break
			}
			if time.Since(written) > revocationDeadline {
				return Revocation{}, fmt.Errorf("the revoked token of %s still answered %d after %s", u.name, code, revocationDeadline)
			}
			time.Sleep(time.Millisecond)
		}
	}
	slices.Sort(delays)
	return Revocation{Users: len(delays), P50Ms: ms(percentile(delays, 50)), MaxMs: ms(delays[len(delays)-1])}, nil
}

// status sends GET path to the portal with token and returns the status code.
func (p *portalClient) status(ctx context.Context, path, token string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := p.http.Do(req)
	if err != nil {
		return 0, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}
