package real

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// checkNoPasswordLeaks looks for every password Mooring generated or was given in its
// Secrets (the databases' credentials and superuser Secrets, rotated ones included) where
// none may be: the log of every container of every pod (the instance managers', the
// servers', the Jobs', the operator's), the cluster's own logs, events, Mooring's objects,
// the Jobs' specs, and the command line of every process on this machine. It runs once
// the tests are done, when every password the tests made exists, and reports how many it
// looked for.
func checkNoPasswordLeaks(ctx context.Context) (int, error) {
	secrets, err := suite.cs.CoreV1().Secrets("").List(ctx, metav1.ListOptions{LabelSelector: mooringv1.ManagedByLabel + "=" + mooringv1.ManagedBy})
	if err != nil {
		return 0, err
	}
	var passwords [][]byte
	for _, s := range secrets.Items {
		// Passwords, and the private keys of the clusters' CAs and certificates.
		for _, key := range []string{"password", "tls.key", "ca.key"} {
			if p := s.Data[key]; len(p) >= 8 {
				passwords = append(passwords, p)
			}
		}
	}
	if len(passwords) == 0 {
		return 0, fmt.Errorf("no password in %d Secrets labelled %s=%s: the check would look for nothing", len(secrets.Items), mooringv1.ManagedByLabel, mooringv1.ManagedBy)
	}
	var leaks []string
	check := func(where string, data []byte) {
		for _, p := range passwords {
			if bytes.Contains(data, p) {
				leaks = append(leaks, where)
				return
			}
		}
	}
	pods, err := suite.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	for _, p := range pods.Items {
		var containers []corev1.Container
		containers = append(append(containers, p.Spec.InitContainers...), p.Spec.Containers...)
		for _, c := range containers {
			logs, err := suite.cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: c.Name}).DoRaw(ctx)
			if err == nil {
				check(fmt.Sprintf("the log of %s/%s container %s", p.Namespace, p.Name, c.Name), logs)
			}
		}
	}
	_ = filepath.WalkDir(filepath.Join(suite.stateDir, "cluster", "logs"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, err := os.ReadFile(path); err == nil {
				check(path, b)
			}
		}
		return nil
	})
	events, err := suite.cs.EventsV1().Events("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	for _, ev := range events.Items {
		check("event "+ev.Namespace+"/"+ev.Name, []byte(ev.Note))
	}
	jobs, err := suite.cs.BatchV1().Jobs("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	for _, j := range jobs.Items {
		b, _ := json.Marshal(j.Spec)
		check("the spec of Job "+j.Namespace+"/"+j.Name, b)
	}
	for _, gvk := range []schema.GroupVersionKind{
		{Group: "mooring.dev", Version: "v1beta1", Kind: "DatabaseClusterList"},
		{Group: "mooring.dev", Version: "v1", Kind: "BackupList"},
		{Group: "mooring.dev", Version: "v1", Kind: "AppList"},
	} {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk)
		if err := suite.c.List(ctx, list); err != nil {
			return 0, err
		}
		b, _ := json.Marshal(list)
		check(gvk.Kind, b)
	}
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, path := range cmdlines {
		if b, err := os.ReadFile(path); err == nil {
			check("the command line of process "+filepath.Base(filepath.Dir(path))+" ("+strings.ReplaceAll(string(b), "\x00", " ")+")", b)
		}
	}
	if len(leaks) > 0 {
		return len(passwords), fmt.Errorf("a password appears in: %s", strings.Join(leaks, "; "))
	}
	return len(passwords), nil
}
