// Package v1 contains the mooring.dev/v1 API: App, CacheInstance and Backup.
//
// Besides the types, the contract_*.go files declare, once, what the operator and the
// programs around it (kubectl mooring, the portal, the metrics, the tests) must agree on:
// the list of kinds, annotations, labels, finalizers, condition types and reasons, and
// the components of children. api/v1beta1 declares DatabaseCluster's own.
//
// +kubebuilder:object:generate=true
// +groupName=mooring.dev
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "mooring.dev", Version: "v1"}

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the kinds of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// knownTypes are this package's kinds and lists; each kind's file adds its own in init.
// (apimachinery's SchemeBuilder keeps api packages free of controller-runtime.)
var knownTypes []runtime.Object

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, knownTypes...)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
