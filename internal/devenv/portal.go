package devenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Portal identity and namespaces, as config/portal makes them.
const (
	PortalNamespace      = "mooring-portal"
	PortalServiceAccount = "mooring-portal"
)

// portalFiles are the parts of config/portal a cluster without the portal's Deployment
// needs: namespaces, ServiceAccount, the generated role, its bindings, the user access
// rules and the policy on direct User edits. The Deployment and Service are for
// in-cluster installs.
var portalFiles = []string{"namespace.yaml", "service_account.yaml", "rbac/role.yaml", "role_binding.yaml", "user_access.yaml", "user_grants_policy.yaml", "team_grants_policy.yaml"}

// UserRoles renders config/default with kubectl kustomize and returns the ClusterRoles
// labelled app.kubernetes.io/component=user-role (mooring-admin, mooring-developer,
// mooring-auditor) as they are installed.
func UserRoles(root, kubectl string) ([]*unstructured.Unstructured, error) {
	out, err := exec.Command(kubectl, "kustomize", filepath.Join(root, "config", "default")).Output()
	if err != nil {
		return nil, fmt.Errorf("kubectl kustomize config/default: %w", err)
	}
	docs, err := readDocsFrom(string(out))
	if err != nil {
		return nil, err
	}
	var roles []*unstructured.Unstructured
	for _, d := range docs {
		if d.GetKind() == "ClusterRole" && d.GetLabels()["app.kubernetes.io/component"] == "user-role" {
			roles = append(roles, d)
		}
	}
	if len(roles) == 0 {
		return nil, fmt.Errorf("no ClusterRole labelled app.kubernetes.io/component=user-role in config/default")
	}
	return roles, nil
}

// InstallPortal applies the user ClusterRoles and the portal's RBAC from config/portal,
// and writes <stateDir>/portal.kubeconfig with a token of the portal's ServiceAccount,
// so the portal runs with exactly the rights it has in production. It returns that
// kubeconfig's path and a rest.Config for it.
func InstallPortal(ctx context.Context, cfg *rest.Config, root, kubectl, stateDir string) (string, *rest.Config, error) {
	return InstallPortalIn(ctx, cfg, root, kubectl, stateDir, PortalNamespace)
}

// InstallPortalIn is InstallPortal with the portal's own namespace (its Secrets, Lease
// and ServiceAccount) named ns instead of mooring-portal: end-to-end packages sharing one
// cluster each install a portal of their own this way (see InNamespace).
func InstallPortalIn(ctx context.Context, cfg *rest.Config, root, kubectl, stateDir, ns string) (string, *rest.Config, error) {
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return "", nil, err
	}
	roles, err := UserRoles(root, kubectl)
	if err != nil {
		return "", nil, err
	}
	objs := roles
	for _, f := range portalFiles {
		data, err := os.ReadFile(filepath.Join(root, "config", "portal", f))
		if err != nil {
			return "", nil, err
		}
		docs, err := readDocsFrom(string(data))
		if err != nil {
			return "", nil, fmt.Errorf("read config/portal/%s: %w", f, err)
		}
		objs = append(objs, docs...)
	}
	for _, o := range InNamespace(objs, ns) {
		if err := apply(ctx, c, o); err != nil {
			return "", nil, err
		}
	}

	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", nil, err
	}
	ttl := int64(24 * 60 * 60)
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, PortalServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &ttl}}, metav1.CreateOptions{})
	if err != nil {
		return "", nil, fmt.Errorf("token for ServiceAccount %s/%s: %w", ns, PortalServiceAccount, err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[PortalServiceAccount] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["portal"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: PortalServiceAccount, Namespace: ns}
	kc.CurrentContext = "portal"
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return "", nil, err
	}
	path := filepath.Join(stateDir, "portal.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return "", nil, err
	}
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return "", nil, err
	}
	return path, rc, nil
}

// InNamespace returns config/portal's objects moved from the mooring-portal namespace to
// ns: the Namespace itself, the objects in it, and the ServiceAccount subject of every
// binding. A binding outside ns (the ClusterRoleBinding, the RoleBinding in the users'
// namespace) gets the suffix "-<ns>" to its name, so two portals' bindings live side by
// side. Everything else (ClusterRoles, the users' namespace, the policy) is the same for
// every portal and applied as it is. The objects are changed in place.
func InNamespace(objs []*unstructured.Unstructured, ns string) []*unstructured.Unstructured {
	if ns == PortalNamespace {
		return objs
	}
	for _, o := range objs {
		switch {
		case o.GetKind() == "Namespace" && o.GetName() == PortalNamespace:
			o.SetName(ns)
			continue
		case o.GetNamespace() == PortalNamespace:
			o.SetNamespace(ns)
		}
		if o.GetKind() != "RoleBinding" && o.GetKind() != "ClusterRoleBinding" {
			continue
		}
		subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
		moved := false
		for _, s := range subjects {
			if s, ok := s.(map[string]any); ok && s["kind"] == "ServiceAccount" && s["namespace"] == PortalNamespace {
				s["namespace"] = ns
				moved = true
			}
		}
		if !moved {
			continue
		}
		_ = unstructured.SetNestedSlice(o.Object, subjects, "subjects")
		if o.GetNamespace() != ns {
			o.SetName(o.GetName() + "-" + ns)
		}
	}
	return objs
}
