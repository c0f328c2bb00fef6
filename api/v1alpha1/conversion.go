package v1alpha1

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	"github.com/mooringhq/mooring/api/v1beta1"
)

// ConversionAnnotation carries, on a v1alpha1 object, the v1beta1 fields v1alpha1 has no
// place for, so that v1beta1 → v1alpha1 → v1beta1 loses nothing (the Cluster API way).
const ConversionAnnotation = "mooring.dev/v1beta1-fields"

// beta1Only are the v1beta1 fields v1alpha1 lacks.
type beta1Only struct {
	Storage        *v1beta1.StorageSpec   `json:"storage,omitempty"`
	SecretName     string                 `json:"secretName,omitempty"`
	DeletionPolicy v1beta1.DeletionPolicy `json:"deletionPolicy,omitempty"`
	StorageSize    *resource.Quantity     `json:"storageSize,omitempty"`
	// Credentials is status, kept so that a status write in v1alpha1 does not make
	// Mooring take the Secret's credentials for the database's.
	Credentials *v1beta1.DatabaseCredentialsStatus `json:"credentials,omitempty"`
}

func (b beta1Only) empty() bool {
	return b.Storage == nil && b.SecretName == "" && b.DeletionPolicy == "" && b.StorageSize == nil && b.Credentials == nil
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

	raw, found := dst.Annotations[ConversionAnnotation]
	if !found {
		return nil
	}
	delete(dst.Annotations, ConversionAnnotation)
	if len(dst.Annotations) == 0 {
		dst.Annotations = nil
	}
	var extra beta1Only
	if err := json.Unmarshal([]byte(raw), &extra); err != nil {
		return fmt.Errorf("read annotation %s: %w", ConversionAnnotation, err)
	}
	if extra.Storage != nil {
		dst.Spec.Storage = *extra.Storage
	}
	dst.Spec.SecretName = extra.SecretName
	dst.Spec.DeletionPolicy = extra.DeletionPolicy
	dst.Status.StorageSize = extra.StorageSize
	dst.Status.Credentials = extra.Credentials
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

	extra := beta1Only{
		SecretName:     src.Spec.SecretName,
		DeletionPolicy: src.Spec.DeletionPolicy,
		StorageSize:    src.Status.StorageSize,
		Credentials:    src.Status.Credentials.DeepCopy(),
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

func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
