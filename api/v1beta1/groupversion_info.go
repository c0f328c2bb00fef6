// Package v1beta1 contains the mooring.dev/v1beta1 API: DatabaseCluster, stored in this
// version. It is the conversion hub; v1alpha1 converts to and from it.
//
// Its contract_*.go files declare DatabaseCluster's condition types and reasons,
// finalizers, and the labels and annotations of its children (the ones every kind shares
// are api/v1's).
//
// +kubebuilder:object:generate=true
// +groupName=mooring.dev
package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "mooring.dev", Version: "v1beta1"}

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
