package cache

import (
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/controller/availability"
	"github.com/mooringhq/mooring/internal/engine"
)

const (
	// Component is the app.kubernetes.io/component of a CacheInstance's children.
	Component = mooringv1.CacheInstanceComponent
	// ContainerName is the name of the memcached container.
	ContainerName = "memcached"
	// PortName names the memcached port on the container and the Service.
	PortName = "memcache"
	// DefaultImageRepository is the official memcached image; spec.version is its tag.
	DefaultImageRepository = "memcached"
	// MemcachedUID is the user (and group) the official image's memcached runs as.
	MemcachedUID = int64(11211)

	// The memory limit's headroom over spec.memoryMB, in MiB, is
	//
	//	max(minHeadroomMiB, ceil(memoryMB / 10)) + ceil(maxConnections × connectionKiB / 1024)
	//
	// memcached's -m bounds only the item slabs. On top of them it allocates the hash table
	// (8 bytes per bucket, kept at most 1.5 items per bucket and doubled while it grows:
	// a few per cent of -m for small items, hence 10%), per-thread buffers and statistics
	// (a few MiB whatever the size, hence the 32 MiB floor, which also covers the process
	// itself at the smallest sizes) and, per connection, a read buffer of 16 KiB while it
	// has a request in flight (the connection term: every connection busy at once).
	// Request equals limit, so the scheduler reserves what memcached may really use and
	// the pod is never the first to be evicted under memory pressure for using it.
	minHeadroomMiB = 32
	connectionKiB  = 16
)

func replicas(c *mooringv1.CacheInstance) int32 {
	return ptr.Deref(c.Spec.Replicas, mooringv1.DefaultCacheReplicas)
}

// highlyAvailable reports whether the cache gets the availability defaults: pods that
// prefer one per node and a PodDisruptionBudget. With one replica there is nothing to
// spread, and a budget would only block a drain. (Going from one replica to more, or back,
// changes the pod template, so the Deployment replaces its pods once.)
func highlyAvailable(c *mooringv1.CacheInstance) bool { return replicas(c) > 1 }

func memoryMB(c *mooringv1.CacheInstance) int32 {
	return ptr.Deref(c.Spec.MemoryMB, mooringv1.DefaultCacheMemoryMB)
}

func maxConnections(c *mooringv1.CacheInstance) int32 {
	return ptr.Deref(c.Spec.MaxConnections, mooringv1.DefaultCacheMaxConnections)
}

func port(c *mooringv1.CacheInstance) int32 {
	return ptr.Deref(c.Spec.Port, mooringv1.DefaultCachePort)
}

// Children returns every child the CacheInstance should have right now: its Deployment,
// its Service, its binding ConfigMap and, with more than one replica, its
// PodDisruptionBudget.
func Children(c *mooringv1.CacheInstance) []client.Object {
	out := []client.Object{Deployment(c), Service(c), BindingConfigMap(c)}
	if pdb := PodDisruptionBudget(c); pdb != nil {
		out = append(out, pdb)
	}
	return out
}

// Image is spec.image, or the official memcached image at spec.version.
func Image(c *mooringv1.CacheInstance) string {
	if c.Spec.Image != "" {
		return c.Spec.Image
	}
	version := c.Spec.Version
	if version == "" {
		version = mooringv1.DefaultCacheVersion
	}
	return DefaultImageRepository + ":" + version
}

// Args are memcached's command-line flags: item memory in MiB (memcached's "megabytes"
// are 2^20 bytes), maximum connections and TCP port.
func Args(c *mooringv1.CacheInstance) []string {
	return []string{
		"-m", strconv.Itoa(int(memoryMB(c))),
		"-c", strconv.Itoa(int(maxConnections(c))),
		"-p", strconv.Itoa(int(port(c))),
	}
}

// MemoryLimitMiB is the container's memory request and limit: spec.memoryMB plus the
// headroom described at minHeadroomMiB.
func MemoryLimitMiB(c *mooringv1.CacheInstance) int64 {
	items := int64(memoryMB(c))
	headroom := max(minHeadroomMiB, ceilDiv(items, 10)) + ceilDiv(int64(maxConnections(c))*connectionKiB, 1024)
	return items + headroom
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// Endpoint is where clients connect: the headless Service's name and the port.
func Endpoint(c *mooringv1.CacheInstance) string {
	return fmt.Sprintf("%s.%s.svc:%d", c.Name, c.Namespace, port(c))
}

// Deployment runs the memcached replicas.
func Deployment(c *mooringv1.CacheInstance) *appsv1.Deployment {
	memory := *resource.NewQuantity(MemoryLimitMiB(c)<<20, resource.BinarySI)
	tcpProbe := corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString(PortName)}}
	container := corev1.Container{
		Name:  ContainerName,
		Image: Image(c),
		// The official image's entrypoint runs memcached with these as its flags.
		Args:  Args(c),
		Ports: []corev1.ContainerPort{{Name: PortName, ContainerPort: port(c), Protocol: corev1.ProtocolTCP}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: memory},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: memory},
		},
		ReadinessProbe: &corev1.Probe{ProbeHandler: tcpProbe},
		LivenessProbe:  &corev1.Probe{ProbeHandler: tcpProbe},
		// memcached needs no privilege at all: it writes nothing to disk and listens on an
		// unprivileged port. This meets the "restricted" Pod Security Standard.
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			Privileged:               ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: c.Name, Labels: engine.Labels(Component, c.Name)},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas(c)),
			Selector: &metav1.LabelSelector{MatchLabels: engine.SelectorLabels(Component, c.Name)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: engine.Labels(Component, c.Name)},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{container},
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						RunAsUser:      ptr.To(MemcachedUID),
						RunAsGroup:     ptr.To(MemcachedUID),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					// memcached never talks to the API server.
					AutomountServiceAccountToken: ptr.To(false),
				},
			},
		},
	}
	if highlyAvailable(c) {
		// Replicas on one node would all go with it: a cold cache at once.
		d.Spec.Template.Spec.TopologySpreadConstraints = availability.SpreadOverNodes(Component, c.Name)
	}
	return d
}

// Service is headless: its DNS name resolves to the IP of every ready replica, because
// memcached clients pick the replica for a key themselves (consistent hashing) and a
// load-balancing virtual IP would send each key to a random replica.
func Service(c *mooringv1.CacheInstance) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: c.Name, Labels: engine.Labels(Component, c.Name)},
		Spec: corev1.ServiceSpec{
			Type:      corev1.ServiceTypeClusterIP,
			ClusterIP: corev1.ClusterIPNone,
			Selector:  engine.SelectorLabels(Component, c.Name),
			Ports: []corev1.ServicePort{{
				Name: PortName, Protocol: corev1.ProtocolTCP,
				Port: port(c), TargetPort: intstr.FromString(PortName),
			}},
		},
	}
}

// PodDisruptionBudget lets a node drain take one replica at a time, so most of the cache
// stays warm; nil with a single replica.
func PodDisruptionBudget(c *mooringv1.CacheInstance) *policyv1.PodDisruptionBudget {
	if !highlyAvailable(c) {
		return nil
	}
	return availability.DisruptionBudget(Component, c.Name)
}
