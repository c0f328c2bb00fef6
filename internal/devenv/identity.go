package devenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ServiceAccount is the identity the operator runs as, as in config/default.
const ServiceAccount = "mooring-controller-manager"

// OperatorKubeconfig gives the operator the identity it has in production: a
// ServiceAccount bound to the ClusterRole generated from the +kubebuilder:rbac markers
// (config/rbac/role.yaml) and nothing else. It writes a kubeconfig with a token for that
// ServiceAccount to <stateDir>/operator.kubeconfig and returns its path, so a role that
// misses a verb fails the run instead of hiding behind an admin kubeconfig.
func OperatorKubeconfig(ctx context.Context, cfg *rest.Config, root, stateDir string) (string, error) {
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return "", err
	}
	docs, err := readDocs(filepath.Join(root, "config", "rbac"))
	if err != nil {
		return "", err
	}
	var role *unstructured.Unstructured
	for _, d := range docs {
		if d.GetKind() == "ClusterRole" && d.GetName() == "manager-role" {
			role = d
		}
	}
	if role == nil {
		return "", fmt.Errorf("no ClusterRole manager-role in config/rbac")
	}
	role.SetName("mooring-manager-role")
	sa := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ServiceAccount",
		"metadata": map[string]any{"name": ServiceAccount, "namespace": Namespace},
	}}
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
		"metadata": map[string]any{"name": "mooring-manager-rolebinding"},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role.GetName()},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": ServiceAccount, "namespace": Namespace}},
	}}
	objs := []*unstructured.Unstructured{role, sa, binding}
	// The leader election Role and its binding, placed and named as config/default does,
	// so replicas run with --leader-elect have exactly the production rights.
	for _, d := range docs {
		if (d.GetKind() == "Role" || d.GetKind() == "RoleBinding") && strings.HasPrefix(d.GetName(), "leader-election-") {
			d.SetNamespace(Namespace)
			d.SetName("mooring-" + d.GetName())
			if d.GetKind() == "RoleBinding" {
				_ = unstructured.SetNestedField(d.Object, "mooring-leader-election-role", "roleRef", "name")
				d.Object["subjects"] = []any{map[string]any{"kind": "ServiceAccount", "name": ServiceAccount, "namespace": Namespace}}
			}
			objs = append(objs, d)
		}
	}
	for _, o := range objs {
		if err := apply(ctx, c, o); err != nil {
			return "", err
		}
	}

	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	ttl := int64(24 * 60 * 60)
	tr, err := cs.CoreV1().ServiceAccounts(Namespace).CreateToken(ctx, ServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &ttl}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token for ServiceAccount %s: %w", ServiceAccount, err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[ServiceAccount] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["mooring"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: ServiceAccount, Namespace: corev1.NamespaceDefault}
	kc.CurrentContext = "mooring"
	path := filepath.Join(stateDir, "operator.kubeconfig")
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return "", err
	}
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return "", err
	}
	return path, nil
}
