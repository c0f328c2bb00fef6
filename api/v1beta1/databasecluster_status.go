package v1beta1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Hub marks v1beta1 as the version the others convert through.
func (*DatabaseCluster) Hub() {}

// StatusConditions returns the conditions for the reconcile engine.
func (d *DatabaseCluster) StatusConditions() *[]metav1.Condition { return &d.Status.Conditions }

// SetObservedGeneration records the generation the engine reconciled.
func (d *DatabaseCluster) SetObservedGeneration(g int64) { d.Status.ObservedGeneration = g }

// SetErrorPhase marks the cluster as failed to reconcile.
func (d *DatabaseCluster) SetErrorPhase() { d.Status.Phase = DatabaseError }
