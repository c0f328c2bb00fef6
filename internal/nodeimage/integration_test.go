package nodeimage

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/mooringhq/mooring/internal/ociimage"
)

// TestBusyboxInContainerd builds the smallest catalogue image for real, with mmdebstrap
// from the machine's Debian mirror, imports it into a containerd of its own, and runs
// it; it also imports a `docker load` tarball as `make image` writes them, and checks
// the names ctr gives both.
func TestBusyboxInContainerd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an image with mmdebstrap and starts containerd: not in -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root, for mmdebstrap's root mode and for containerd")
	}
	for _, tool := range []string{"mmdebstrap", "containerd", "ctr"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found; install Debian's packages: apt-get install mmdebstrap containerd runc", tool)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()

	busybox, _ := Find("docker.io/library/busybox:1.37")
	archive, err := Ensure(ctx, busybox, Options{CacheDir: t.TempDir(), Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	address := startContainerd(ctx, t)
	ctrPath, _ := exec.LookPath("ctr")
	ctr := func(args ...string) string {
		t.Helper()
		args = append([]string{"--address", address, "--namespace", Namespace}, args...)
		out, err := exec.CommandContext(ctx, ctrPath, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("ctr %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	if err := Import(ctx, ctrPath, address, archive); err != nil {
		t.Fatal(err)
	}
	if images := strings.Fields(ctr("images", "ls", "--quiet")); !slices.Contains(images, busybox.Ref) {
		t.Fatalf("containerd's images %v, want %s", images, busybox.Ref)
	}
	if _, err := exec.LookPath("runc"); err == nil {
		if out := ctr("run", "--rm", busybox.Ref, "nodeimage-test", "sh", "-c", "echo ok"); strings.TrimSpace(out) != "ok" {
			t.Errorf("busybox said %q, want ok", out)
		}
	} else {
		t.Log("runc not found: busybox imported, not run")
	}

	// A `docker load` tarball, as hack/image writes for the operator: ctr names the
	// image after its RepoTags, normalised, and ImportAs adds the name the pods use.
	img, err := ociimage.Build(ociimage.Spec{
		Name: "hello", Binary: []byte("#!/bin/sh\n"), Platform: v1.Platform{OS: "linux", Architecture: "amd64"}, Created: time.Unix(0, 0),
	})
	if err != nil {
		t.Fatal(err)
	}
	dockerArchive := filepath.Join(t.TempDir(), "hello.tar")
	if err := ociimage.WriteTarball(dockerArchive, img, "hello:dev"); err != nil {
		t.Fatal(err)
	}
	names, err := ArchiveNames(dockerArchive)
	if err != nil {
		t.Fatal(err)
	}
	if err := ImportAs(ctx, ctrPath, address, dockerArchive, "mooring.local/hello:test"); err != nil {
		t.Fatal(err)
	}
	images := strings.Fields(ctr("images", "ls", "--quiet"))
	for _, want := range []string{"docker.io/library/hello:dev", "mooring.local/hello:test"} {
		if !slices.Contains(images, want) {
			t.Errorf("containerd's images %v, want %s", images, want)
		}
	}
	if !slices.Equal(names, []string{"docker.io/library/hello:dev"}) {
		t.Errorf("ArchiveNames says %v, ctr named it docker.io/library/hello:dev", names)
	}
}

// startContainerd runs a containerd of the test's own, with every path of its own and
// no CRI plugin, stops it when the test ends, and returns its socket's address.
func startContainerd(ctx context.Context, t *testing.T) string {
	t.Helper()
	// A unix socket's path has at most 108 bytes: stay short, directly under /tmp.
	dir, err := os.MkdirTemp("/tmp", "nodeimage-")
	if err != nil {
		t.Fatal(err)
	}
	address := filepath.Join(dir, "containerd.sock")
	config := fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri"]

[grpc]
  address = %q

[plugins."io.containerd.internal.v1.opt"]
  path = %q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), address, filepath.Join(dir, "opt"))
	configPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "containerd.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("containerd", "--config", configPath)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var exitErr error
	go func() { exitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		_ = logFile.Close()
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("remove containerd's directory: %v", err)
		}
	})

	// containerd answers once its plugins are loaded: poll its API, not the clock.
	ready, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last []byte
	for {
		out, err := exec.CommandContext(ready, "ctr", "--address", address, "version").CombinedOutput()
		if err == nil {
			return address
		}
		last = out
		select {
		case <-exited:
			log, _ := os.ReadFile(logPath)
			t.Fatalf("containerd exited (%v) before it answered: %s", exitErr, lastLines(log, 5))
		case <-ready.Done():
			log, _ := os.ReadFile(logPath)
			t.Fatalf("containerd did not answer on %s within a minute; ctr said %q; its log ends: %s", address, last, lastLines(log, 5))
		case <-tick.C:
		}
	}
}

func lastLines(data []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// testLog writes the builders' output to the test's log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
