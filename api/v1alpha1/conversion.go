package v1alpha1

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	"github.com/mooringhq/mooring/api/v1beta1"
)

// ConversionAnnotation carries, on a v1alpha1 object, the v1beta1 spec fields v1alpha1
// has no place for (storage, secretName, deletionPolicy), so that v1beta1 → v1alpha1 →
// v1beta1 loses nothing (the Cluster API way). It never carries status: anyone who may
// update the object may write it, and status is for the status subresource to write.
// v1alpha1 has every status field of its own.
const ConversionAnnotation = "mooring.dev/v1beta1-fields"

// beta1Only are the v1beta1 spec fields v1alpha1 lacks: all the annotation carries.
type beta1Only struct {
	Storage         *v1beta1.StorageSpec         `json:"storage,omitempty"`
	SecretName      string                       `json:"secretName,omitempty"`
	DeletionPolicy  v1beta1.DeletionPolicy       `json:"deletionPolicy,omitempty"`
	Resources       *corev1.ResourceRequirements `json:"resources,omitempty"`
	TLS             *v1beta1.DatabaseTLSSpec     `json:"tls,omitempty"`
	SuperuserAccess bool                         `json:"superuserAccess,omitempty"`
}

func (b beta1Only) empty() bool {
	return b.Storage == nil && b.SecretName == "" && b.DeletionPolicy == "" && b.Resources == nil && b.TLS == nil && !b.SuperuserAccess
}

// ConvertTo converts this v1alpha1 DatabaseCluster to the v1beta1 hub.
func (src *DatabaseCluster) ConvertTo(hub conversion.Hub) error {
	dst, ok := hub.(*v1beta1.DatabaseCluster)
	if !ok {
		return fmt.Errorf("unexpected hub type %T", hub)
	}
	dst.ObjectMeta = *src.ObjectMeta.DeepCopy()
	dst.Spec.Engine = v1beta1.DatabaseEngine(src.Spec.Engine)
	dst.Spec.ReplicaCount = src.Spec.Replicas
	dst.Spec.Version = src.Spec.Version
	dst.Spec.Bootstrap = bootstrapTo(src.Spec.Bootstrap)
	dst.Status = v1beta1.DatabaseClusterStatus{
		Replicas:           src.Status.Replicas,
		ReadyReplicas:      src.Status.ReadyReplicas,
		Selector:           src.Status.Selector,
		Phase:              v1beta1.DatabaseClusterPhase(src.Status.Phase),
		PrimaryEndpoint:    src.Status.PrimaryEndpoint,
		ObservedGeneration: src.Status.ObservedGeneration,
		Conditions:         src.Status.Conditions,
	}
	if b := src.Status.Binding; b != nil {
		dst.Status.Binding = &v1beta1.ServiceBindingStatus{Name: b.Name, SecretName: b.SecretName}
	}
	if src.Status.Instances != nil {
		dst.Status.Instances = make([]v1beta1.InstanceStatus, len(src.Status.Instances))
		for i, in := range src.Status.Instances {
			dst.Status.Instances[i] = v1beta1.InstanceStatus{
				Name: in.Name, Role: v1beta1.InstanceRole(in.Role), Ready: in.Ready,
				LagBytes: copyPtr(in.LagBytes), GTIDGap: copyPtr(in.GTIDGap), Position: in.Position, Message: in.Message,
			}
		}
	}
	if r := src.Status.RestoredFrom; r != nil {
		dst.Status.RestoredFrom = &v1beta1.RestoredFromStatus{Backup: r.Backup, Dump: r.Dump, Time: r.Time.DeepCopy()}
	}
	dst.Status.StorageSize = copyQuantity(src.Status.StorageSize)
	dst.Status.Initialized = src.Status.Initialized
	if c := src.Status.Credentials; c != nil {
		dst.Status.Credentials = &v1beta1.DatabaseCredentialsStatus{Revision: c.Revision, Hash: c.Hash, AdminHash: c.AdminHash}
	}

	raw, found := dst.Annotations[ConversionAnnotation]
	if !found {
		return nil
	}
	// Only the spec fields it carries are taken from the annotation, never status. One
	// that cannot be read (in full) is not an error of conversion, which would fail every
	// read and write of the object with an InternalError: what can be read of it is taken
	// (an object stored as v1alpha1 by an older Mooring, which wrote status there too,
	// keeps its spec), and it stays, on the v1beta1 object too, where the validating
	// webhook (which sees every request in v1beta1) refuses it, naming the annotation and
	// what is wrong with it.
	extra, err := readAnnotation(raw)
	if err == nil {
		delete(dst.Annotations, ConversionAnnotation)
		if len(dst.Annotations) == 0 {
			dst.Annotations = nil
		}
	}
	if extra.Storage != nil {
		dst.Spec.Storage = *extra.Storage
	}
	dst.Spec.SecretName = extra.SecretName
	dst.Spec.DeletionPolicy = extra.DeletionPolicy
	dst.Spec.Resources = extra.Resources
	dst.Spec.TLS = extra.TLS
	dst.Spec.SuperuserAccess = extra.SuperuserAccess
	return nil
}

// ConvertFrom converts the v1beta1 hub to this v1alpha1 DatabaseCluster.
func (dst *DatabaseCluster) ConvertFrom(hub conversion.Hub) error {
	src, ok := hub.(*v1beta1.DatabaseCluster)
	if !ok {
		return fmt.Errorf("unexpected hub type %T", hub)
	}
	dst.ObjectMeta = *src.ObjectMeta.DeepCopy()
	dst.Spec = DatabaseClusterSpec{
		Engine:    string(src.Spec.Engine),
		Replicas:  src.Spec.ReplicaCount,
		Version:   src.Spec.Version,
		Bootstrap: bootstrapFrom(src.Spec.Bootstrap),
	}
	dst.Status = DatabaseClusterStatus{
		Replicas:           src.Status.Replicas,
		ReadyReplicas:      src.Status.ReadyReplicas,
		Selector:           src.Status.Selector,
		Phase:              string(src.Status.Phase),
		PrimaryEndpoint:    src.Status.PrimaryEndpoint,
		ObservedGeneration: src.Status.ObservedGeneration,
		Conditions:         src.Status.Conditions,
	}
	if b := src.Status.Binding; b != nil {
		dst.Status.Binding = &ServiceBindingStatus{Name: b.Name, SecretName: b.SecretName}
	}
	if src.Status.Instances != nil {
		dst.Status.Instances = make([]InstanceStatus, len(src.Status.Instances))
		for i, in := range src.Status.Instances {
			dst.Status.Instances[i] = InstanceStatus{
				Name: in.Name, Role: string(in.Role), Ready: in.Ready,
				LagBytes: copyPtr(in.LagBytes), GTIDGap: copyPtr(in.GTIDGap), Position: in.Position, Message: in.Message,
			}
		}
	}
	if r := src.Status.RestoredFrom; r != nil {
		dst.Status.RestoredFrom = &RestoredFromStatus{Backup: r.Backup, Dump: r.Dump, Time: r.Time.DeepCopy()}
	}
	dst.Status.StorageSize = copyQuantity(src.Status.StorageSize)
	dst.Status.Initialized = src.Status.Initialized
	if c := src.Status.Credentials; c != nil {
		dst.Status.Credentials = &DatabaseCredentialsStatus{Revision: c.Revision, Hash: c.Hash, AdminHash: c.AdminHash}
	}

	// A v1beta1 object carries the annotation only when conversion could not read it (or
	// a v1beta1 client wrote it). One that cannot be read goes back as it came: within one
	// request the API server converts to v1beta1 for the mutating webhook and back, and
	// the validating webhook must still see it to refuse it.
	if raw, found := src.Annotations[ConversionAnnotation]; found {
		if CheckConversionAnnotation(raw) != nil {
			return nil
		}
		delete(dst.Annotations, ConversionAnnotation)
		if len(dst.Annotations) == 0 {
			dst.Annotations = nil
		}
	}
	extra := beta1Only{
		SecretName:      src.Spec.SecretName,
		DeletionPolicy:  src.Spec.DeletionPolicy,
		Resources:       src.Spec.Resources.DeepCopy(),
		TLS:             src.Spec.TLS.DeepCopy(),
		SuperuserAccess: src.Spec.SuperuserAccess,
	}
	if src.Spec.Storage.Size != nil || src.Spec.Storage.StorageClassName != nil {
		extra.Storage = src.Spec.Storage.DeepCopy()
	}
	if extra.empty() {
		return nil
	}
	raw, err := json.Marshal(extra)
	if err != nil {
		return err
	}
	if dst.Annotations == nil {
		dst.Annotations = map[string]string{}
	}
	dst.Annotations[ConversionAnnotation] = string(raw)
	return nil
}

// bootstrapTo converts spec.bootstrap, which both versions have, to v1beta1.
func bootstrapTo(src *BootstrapSpec) *v1beta1.BootstrapSpec {
	if src == nil {
		return nil
	}
	dst := &v1beta1.BootstrapSpec{}
	if b := src.Backup; b != nil {
		dst.Backup = &v1beta1.BootstrapBackup{Name: b.Name, Dump: b.Dump}
	}
	return dst
}

// bootstrapFrom converts spec.bootstrap from v1beta1.
func bootstrapFrom(src *v1beta1.BootstrapSpec) *BootstrapSpec {
	if src == nil {
		return nil
	}
	dst := &BootstrapSpec{}
	if b := src.Backup; b != nil {
		dst.Backup = &BootstrapBackup{Name: b.Name, Dump: b.Dump}
	}
	return dst
}

func copyQuantity(q *resource.Quantity) *resource.Quantity {
	if q == nil {
		return nil
	}
	c := q.DeepCopy()
	return &c
}

func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
