package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// StatusConditions returns the CacheInstance's conditions for the reconcile engine.
func (c *CacheInstance) StatusConditions() *[]metav1.Condition { return &c.Status.Conditions }

// SetObservedGeneration records the generation the engine reconciled.
func (c *CacheInstance) SetObservedGeneration(g int64) { c.Status.ObservedGeneration = g }

// SetErrorPhase marks the CacheInstance as failed to reconcile.
func (c *CacheInstance) SetErrorPhase() { c.Status.Phase = CacheInstanceError }
