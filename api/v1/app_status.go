package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// StatusConditions returns the App's conditions for the reconcile engine.
func (a *App) StatusConditions() *[]metav1.Condition { return &a.Status.Conditions }

// SetObservedGeneration records the generation the engine reconciled.
func (a *App) SetObservedGeneration(g int64) { a.Status.ObservedGeneration = g }

// SetErrorPhase marks the App as failed to reconcile.
func (a *App) SetErrorPhase() { a.Status.Phase = AppError }
