// Package v1alpha1 contains the portal.mooring.dev/v1alpha1 API: the User kind that
// mooring-portal keeps its accounts in and the Team kind that grants a role to a set of
// them. It is a group of its own so that no rule on
// mooring.dev (wildcard or not) ever exposes portal accounts or teams.
//
// +kubebuilder:object:generate=true
// +groupName=portal.mooring.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "portal.mooring.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the kinds of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &User{}, &UserList{}, &Team{}, &TeamList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
