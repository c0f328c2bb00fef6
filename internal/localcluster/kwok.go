package localcluster

import (
	"bytes"
	"context"
	_ "embed" // Mooring's own kwok Stages
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// kwok manages only nodes carrying this annotation, so it never touches a real node.
const (
	kwokNodeAnnotation = "kwok.x-k8s.io/node"
	kwokNodeSelector   = kwokNodeAnnotation + "=fake"
)

// kwokStageGlobs are kwok's own Stage manifests, relative to its module directory:
// nodes become Ready and keep their lease, pods become Ready, Job pods succeed and
// deleted pods go away (there is no kubelet to do any of it).
var kwokStageGlobs = []string{
	"kustomize/stage/node/fast/node-initialize.yaml",
	"kustomize/stage/node/heartbeat-with-lease/*.yaml",
	"kustomize/stage/pod/fast/*.yaml",
}

// Images that Mooring's own kwok Stages (stages/pod-failures.yaml) make fail: a pod whose
// first container runs one of them reports what a kubelet reports for such a container.
const (
	// UnpullableImage leaves the container waiting in ImagePullBackOff.
	UnpullableImage = "registry.invalid/mooring/unpullable:1"
	// CrashingImage leaves the container waiting in CrashLoopBackOff after exiting 1.
	CrashingImage = "registry.invalid/mooring/crashing:1"
)

//go:embed stages/pod-failures.yaml
var podFailureStages []byte

// writeKwokConfig concatenates kwok's Stage manifests, and Mooring's own, into one file
// for --config. kwok's are read from the module cache at run time instead of being copied into the
// repository; hack/tools/build.sh records where that module is.
func writeKwokConfig(binDir, path string) error {
	ref := filepath.Join(binDir, "kwok-module-dir")
	raw, err := os.ReadFile(ref)
	if err != nil {
		return fmt.Errorf("kwok stages: read %s (written by hack/tools/build.sh): %w", ref, err)
	}
	moduleDir := strings.TrimSpace(string(raw))
	var buf bytes.Buffer
	for _, g := range kwokStageGlobs {
		files, err := filepath.Glob(filepath.Join(moduleDir, g))
		if err != nil {
			return fmt.Errorf("kwok stages: %w", err)
		}
		n := 0
		for _, f := range files {
			if filepath.Base(f) == "kustomization.yaml" {
				continue
			}
			data, err := os.ReadFile(f)
			if err != nil {
				return fmt.Errorf("kwok stages: %w", err)
			}
			fmt.Fprintf(&buf, "---\n# %s\n%s\n", f, bytes.TrimSpace(data))
			n++
		}
		if n == 0 {
			return fmt.Errorf("kwok stages: nothing matches %s in %s (listed in %s)", g, moduleDir, ref)
		}
	}
	fmt.Fprintf(&buf, "---\n# Mooring's stages/pod-failures.yaml\n%s\n", bytes.TrimSpace(podFailureStages))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("kwok stages: %w", err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("kwok stages: %w", err)
	}
	return nil
}

// nodeName is the name of simulated node i.
func nodeName(i int) string { return fmt.Sprintf("mooring-node-%d", i) }

// ensureNodes creates the simulated nodes that do not exist yet. They carry no taint,
// so ordinary workloads schedule on them; kwok fills in capacity and conditions.
func ensureNodes(ctx context.Context, cs kubernetes.Interface, n int) error {
	for i := range n {
		name := nodeName(i)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{kwokNodeAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels: map[string]string{
				"kubernetes.io/hostname": name,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
				"type":                   "kwok",
			},
		}}
		_, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create node %s: %w", name, err)
		}
	}
	return nil
}

// releaseNodeLeases deletes the leases of the simulated nodes. After a restart they
// are still held by the previous kwok process, whose identity is random per process,
// so the new one would wait for them to expire (up to 40s) before it manages the nodes
// and their pods again; meanwhile new pods would stay Pending.
func releaseNodeLeases(ctx context.Context, cs kubernetes.Interface) error {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	for _, node := range nodes.Items {
		if node.Annotations[kwokNodeAnnotation] != "fake" {
			continue
		}
		err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(ctx, node.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("release lease of node %s: %w", node.Name, err)
		}
	}
	return nil
}

// nodesReady holds once every simulated node is Ready, free of the not-ready and
// unreachable taints (the node lifecycle controller removes them shortly after Ready;
// until then nothing schedules) and has a lease renewed since the current kwok
// started: kwok manages a node's pods only while it holds the lease, and without the
// renewals the nodes turn NotReady again after the controller's grace period.
func nodesReady(cs kubernetes.Interface, n int, kwokStarted time.Time) check {
	return func(ctx context.Context) (bool, string) {
		var waiting []string
		for i := range n {
			node, err := cs.CoreV1().Nodes().Get(ctx, nodeName(i), metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			if s := nodeProblem(node); s != "" {
				waiting = append(waiting, node.Name+" "+s)
				continue
			}
			lease, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, node.Name, metav1.GetOptions{})
			if err != nil {
				waiting = append(waiting, node.Name+" lease: "+err.Error())
			} else if lease.Spec.RenewTime == nil || lease.Spec.RenewTime.Time.Before(kwokStarted) {
				waiting = append(waiting, node.Name+" lease not renewed by this kwok yet")
			}
		}
		return len(waiting) == 0, strings.Join(waiting, "; ")
	}
}

func nodeProblem(node *corev1.Node) string {
	ready := "no Ready condition"
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = "Ready=" + string(c.Status)
			if c.Status == corev1.ConditionTrue {
				ready = ""
			}
		}
	}
	if ready != "" {
		return ready
	}
	for _, t := range node.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return "tainted " + t.Key
		}
	}
	return ""
}
