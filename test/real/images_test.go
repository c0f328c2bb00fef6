package real

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/localcluster"
	"github.com/mooringhq/mooring/internal/nodeimage"
	"github.com/mooringhq/mooring/internal/testutil"
)

// missingImage is an image the node does not have.
const missingImage = "nginx:1.27"

// pullFailsWithin bounds the time from the App's creation to its condition carrying the
// refusal: scheduling, the sandbox and one pull that fails at once. A pull that looked
// a registry up or waited for a connection would take longer, or fail differently.
const pullFailsWithin = 30 * time.Second

// TestMissingImageRefusedLocally: an App whose image the real node does not have is not
// Ready, and its condition carries containerd's error, which comes from the node's local
// refusal (host 127.0.0.1: no lookup, nothing leaves the machine), names the images the
// node has and says how to add one; `mooring-dev image load` of an archive with that
// name then lets the App run.
func TestMissingImageRefusedLocally(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "missing-image")
	app := webApp(ns, "newer", 1)
	app.Spec.Image = missingImage
	t0 := time.Now()
	createApp(t, app)
	var msg string
	testutil.Eventually(t, pullFailsWithin, "App "+app.Name+" not Ready, with the local node's refusal", func() error {
		live := &mooringv1.App{}
		if err := suite.c.Get(context.Background(), client.ObjectKeyFromObject(app), live); err != nil {
			return err
		}
		c := apimeta.FindStatusCondition(live.Status.Conditions, "Ready")
		if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "pulls from no registry") {
			return fmt.Errorf("Ready condition %+v", c)
		}
		msg = c.Reason + ": " + c.Message
		return nil
	})
	t.Logf("refused %s after the App's creation: %s", time.Since(t0).Round(100*time.Millisecond), msg)
	for _, want := range []string{
		"pulling from host 127.0.0.1:",      // containerd asked the local refusal only
		"docker.io/library/busybox:1.37",    // an image the node has
		"mooring-dev image load",            // how to add one
		"docker.io/library/" + missingImage, // the image asked for
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the condition does not say %q: %s", want, msg)
		}
	}
	if t.Failed() {
		return
	}

	archive := filepath.Join(t.TempDir(), "nginx.tar")
	retagArchive(t, webImage, "docker.io/library/"+missingImage, archive)
	devBin := filepath.Join(suite.root, "bin", "mooring-dev")
	out, err := exec.Command(devBin, "image", "load", archive).CombinedOutput()
	if err != nil {
		t.Fatalf("%s image load: %v\n%s", devBin, err, out)
	}
	// Into every node: the App's replacement pod may land on either.
	if want := "into nodes " + strings.Join(suite.cluster.RealNodes(), ", "); !strings.Contains(string(out), want) {
		t.Fatalf("%s image load said %q; want it loaded %s", devBin, out, want)
	}
	names, err := localcluster.RealNodeImages(context.Background())
	if err != nil || !slices.Contains(names, "docker.io/library/"+missingImage) {
		t.Fatalf("the node's images after the load: %v %v", names, err)
	}
	// A new pod starts at once; the failed one would wait out its pull back-off.
	mustKubectl(t, "-n", ns, "delete", "pods", "--all", "--wait=false")
	waitApp(t, ns, app.Name, metav1.ConditionTrue, 2*time.Minute)
}

// retagArchive writes a copy of the node image archive (an OCI layout, internal/nodeimage)
// of image from, named to.
func retagArchive(t *testing.T, from, to, dst string) {
	t.Helper()
	ref := from
	if strings.Count(strings.Split(ref, ":")[0], "/") < 2 {
		ref = "docker.io/" + ref
	}
	named := func(index map[string]any, rename bool) bool {
		found := false
		manifests, _ := index["manifests"].([]any)
		for _, m := range manifests {
			entry, _ := m.(map[string]any)
			annotations, _ := entry["annotations"].(map[string]any)
			if annotations[nodeimage.AnnotationContainerdName] == ref {
				found = true
				if rename {
					annotations[nodeimage.AnnotationContainerdName], annotations[nodeimage.AnnotationRefName] = to, to
				}
			}
		}
		return found
	}
	for _, src := range suite.images {
		if copyArchive(t, src, "", func(index map[string]any) bool { return named(index, false) }) {
			copyArchive(t, src, dst, func(index map[string]any) bool { return named(index, true) })
			return
		}
	}
	t.Fatalf("no archive of %s among %v", ref, suite.images)
}

// copyArchive reads the image archive src, lets edit look at (and change) its index.json
// and, when dst is not empty, writes the archive with the edited index to dst. It
// returns what edit returned.
func copyArchive(t *testing.T, src, dst string, edit func(map[string]any) bool) bool {
	t.Helper()
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	out := io.Discard
	if dst != "" {
		o, err := os.Create(dst)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = o.Close() }()
		out = o
	}
	w, r := tar.NewWriter(out), tar.NewReader(f)
	result := false
	for {
		h, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name != "index.json" {
			if dst == "" {
				continue
			}
			if err := w.WriteHeader(h); err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(w, r); err != nil {
				t.Fatal(err)
			}
			continue
		}
		var m map[string]any
		if err := json.NewDecoder(r).Decode(&m); err != nil {
			t.Fatal(err)
		}
		result = edit(m)
		if dst == "" {
			return result
		}
		body, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		h.Size = int64(len(body))
		if err := w.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if dst != "" {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return result
}
