package localcluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The real node pulls from no registry: containerd's registry configuration sends every
// registry's requests to registryRefusal on 127.0.0.1, so a pull of an image the node
// does not have fails at once, without a DNS lookup or a connection leaving the machine,
// and the error containerd reports (which the kubelet puts in the pod's status, and
// Mooring in its conditions) says what the node has and how to add an image.

// ImageLoadCommand is how a person adds an image to the local real node.
const ImageLoadCommand = "mooring-dev image load <image.tar>"

// registryRefusal answers every request with 403 and a reason phrase that explains the
// refusal: containerd 1.6 puts a failed resolve's status line, and nothing of the body,
// in its error ("pulling from host ... failed with status code ...: 403 <reason>").
type registryRefusal struct {
	ln     net.Listener
	srv    *http.Server
	images func(context.Context) ([]string, error)
}

// startRegistryRefusal listens on a free port of 127.0.0.1; images lists the node's
// images for the message.
func startRegistryRefusal(images func(context.Context) ([]string, error)) (*registryRefusal, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("registry refusal: %w", err)
	}
	r := &registryRefusal{ln: ln, images: images}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *registryRefusal) url() string { return "http://" + r.ln.Addr().String() }

func (r *registryRefusal) close() {
	if r != nil {
		_ = r.srv.Close()
	}
}

// ServeHTTP writes the status line itself: net/http only writes the standard reason
// phrases, and the reason is the only text of the answer containerd passes on.
func (r *registryRefusal) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	reason := r.reason(req.Context())
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, reason, http.StatusForbidden)
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	defer func() { _ = conn.Close() }()
	_, _ = fmt.Fprintf(buf, "HTTP/1.1 403 %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", reason)
	_ = buf.Flush()
}

// reason is one line: what the node has, and how to add an image.
func (r *registryRefusal) reason(ctx context.Context) string {
	have := "(could not list them)"
	if names, err := r.images(ctx); err == nil {
		have = strings.Join(names, ", ")
	}
	return fmt.Sprintf("a local node pulls from no registry; each has the images %s; add one with: %s (and imagePullPolicy IfNotPresent)",
		have, ImageLoadCommand)
}

// registryHostsFile is containerd's hosts.toml for every registry ("_default"): its only
// host and server is the refusal. containerd 1.6 refuses a file without a host table
// ("invalid `host` tree") and then asks the registry itself.
func registryHostsFile(server string) string {
	return fmt.Sprintf(`# Every registry's requests go to the local refusal: this node pulls from no registry.
server = %[1]q

[host.%[1]q]
  capabilities = ["pull", "resolve"]
`, server)
}

// writeRegistryConfig writes the hosts directory containerd's config_path names.
func writeRegistryConfig(p nodePaths, server string) error {
	dir := filepath.Join(p.registryHosts(), "_default")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "hosts.toml"), []byte(registryHostsFile(server)), 0o644)
}

// listImages returns the names of the images in a node's containerd, without the
// digest-only entries.
func listImages(ctx context.Context, socket string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ctr", "--address", socket, "-n", "k8s.io", "images", "ls", "-q").Output()
	if err != nil {
		return nil, fmt.Errorf("list the node's images: %w", err)
	}
	var names []string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		name := strings.TrimSpace(sc.Text())
		if name == "" || strings.HasPrefix(name, "sha256:") || strings.Contains(name, "@") {
			continue
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

// errNoRealNode is what the image commands say when no real node runs here.
var errNoRealNode = errors.New("no local cluster runs a real node on this machine (start one with `make run` or `make dev-up`)")

// runningNodeSockets are the containerd sockets of the machine's running real nodes, by
// node name: the first node's in realNodeRunDir, each further one's in a directory of
// its name there (newMember).
func runningNodeSockets() (map[string]string, error) {
	root := newNodePaths("")
	sockets := map[string]string{}
	for i := range MaxRealNodes {
		m := newMember(root, i)
		if _, err := os.Stat(m.paths.containerdSocket()); err == nil {
			sockets[m.name] = m.paths.containerdSocket()
		}
	}
	if len(sockets) == 0 {
		return nil, errNoRealNode
	}
	return sockets, nil
}

// RealNodeImages lists the images of the first real node running on this machine (every
// node gets the same).
func RealNodeImages(ctx context.Context) ([]string, error) {
	sockets, err := runningNodeSockets()
	if err != nil {
		return nil, err
	}
	socket, ok := sockets[RealNodeName]
	if !ok {
		return nil, errNoRealNode
	}
	return listImages(ctx, socket)
}

// LoadImage imports an image archive (docker save, an OCI layout tar, make image's
// bin/image/*.tar) into every real node running on this machine, whose pods find it by
// name from then on, until the cluster stops (a start loads only the images of
// Options.NodeImages). It returns the nodes it loaded it into.
func LoadImage(ctx context.Context, archive string) ([]string, error) {
	sockets, err := runningNodeSockets()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(archive); err != nil {
		return nil, err
	}
	names := slices.Sorted(maps.Keys(sockets))
	for _, name := range names {
		if err := importImage(ctx, sockets[name], archive); err != nil {
			return nil, fmt.Errorf("node %s: %w", name, err)
		}
	}
	return names, nil
}
