package cache

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/engine"
)

// BindingProvider is the servicebinding.io "provider" entry of every Mooring binding.
const BindingProvider = "mooring"

// BindingConfigMapName is the ConfigMap with the cache's binding entries.
func BindingConfigMapName(c *mooringv1.CacheInstance) string { return c.Name + "-binding" }

// BindingConfigMap makes the CacheInstance a servicebinding.io provisioned service: type
// memcached, provider, host (the headless Service, which resolves to every replica) and
// port. memcached has no credentials, so there is no Secret.
func BindingConfigMap(c *mooringv1.CacheInstance) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: BindingConfigMapName(c), Labels: engine.Labels(Component, c.Name)},
		Data: map[string]string{
			"type":     "memcached",
			"provider": BindingProvider,
			"host":     c.Name + "." + c.Namespace + ".svc",
			"port":     strconv.Itoa(int(port(c))),
		},
	}
}
