package instance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mooringhq/mooring/internal/testutil/dbserver"
)

// The integration tests run the manager as a process of its own, under the database's OS
// user (servers refuse root): the test binary re-executes itself into Main.
func TestMain(m *testing.M) {
	if os.Getenv("MOORING_INSTANCE_MAIN") == "1" {
		os.Exit(Main(os.Args[1:]))
	}
	dbserver.UsePath()
	os.Exit(m.Run())
}

// osUser is the user and group ids of name.
type osUser struct {
	name     string
	uid, gid int
}

// serverUser finds the OS user a server binary runs as on this machine, or skips.
func serverUser(t *testing.T, name string) osUser {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("needs root to run the server as user %s", name)
	}
	u, err := user.Lookup(name)
	if err != nil {
		t.Skipf("no OS user %s: %v", name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return osUser{name, uid, gid}
}

// selfCopy copies the test binary where u can execute it (go test's own directory is
// private to root).
func selfCopy(t *testing.T, u osUser) string {
	t.Helper()
	dir := ownedDir(t, u)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "instance.test")
	if err := os.WriteFile(path, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// ownedDir is a temporary directory owned by u.
func ownedDir(t *testing.T, u osUser) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "instance-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chown(dir, u.uid, u.gid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// secretDir writes a Secret's keys as the kubelet would mount them, readable by u.
func secretDir(t *testing.T, u osUser, data map[string]string) string {
	t.Helper()
	dir := ownedDir(t, u)
	for k, v := range data {
		path := filepath.Join(dir, k)
		if err := os.WriteFile(path, []byte(v), 0o400); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(path, u.uid, u.gid); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close() //nolint:errcheck // only its port was wanted
	return l.Addr().(*net.TCPAddr).Port
}

// eventually polls check every 100 ms until it returns nil, and fails the test with
// what and the last error after timeout. (internal/testutil would import this package
// back through the operator's controllers.)
func eventually(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: last seen: %v", timeout, what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// httpc bounds each request, so that a hung manager fails the poll, not go test.
var httpc = &http.Client{Timeout: 5 * time.Second}

// proc is one running manager.
type proc struct {
	cmd        *exec.Cmd
	statusAddr string
	// adminSecretDir is the manager's --admin-secret-dir: /status wants the token of
	// its password.
	adminSecretDir string
	mu             sync.Mutex
	out            bytes.Buffer
	done           chan struct{}
	err            error
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// startManager runs `instance run args...` as u, with its status server on a free port.
func startManager(t *testing.T, bin string, u osUser, args ...string) *proc {
	t.Helper()
	return startManagerEnv(t, bin, u, nil, args...)
}

// startManagerEnv is startManager with env added to the manager's environment.
func startManagerEnv(t *testing.T, bin string, u osUser, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{statusAddr: "127.0.0.1:" + strconv.Itoa(freePort(t)), done: make(chan struct{})}
	for _, a := range args {
		if dir, ok := strings.CutPrefix(a, "--admin-secret-dir="); ok {
			p.adminSecretDir = dir
		}
	}
	p.cmd = exec.Command(bin, append([]string{"run", "--status-address=" + p.statusAddr}, args...)...)
	p.cmd.Env = append(append(os.Environ(), "MOORING_INSTANCE_MAIN=1", "HOME=/tmp", "USER="+u.name), env...)
	p.cmd.Stdout, p.cmd.Stderr = p, p
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid)}, Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			t.Logf("manager %s log:\n%s", p.statusAddr, p.log())
		}
	})
	return p
}

// stop sends SIGTERM, as the kubelet does, and waits for a clean exit.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		t.Errorf("manager did not stop within a minute of SIGTERM")
	}
}

// status reads /status.
func (p *proc) status() (Status, error) {
	var s Status
	req, err := http.NewRequest(http.MethodGet, "http://"+p.statusAddr+"/status", nil)
	if err != nil {
		return s, err
	}
	if pw, err := os.ReadFile(filepath.Join(p.adminSecretDir, "password")); err == nil {
		req.Header.Set("Authorization", "Bearer "+StatusToken(string(pw)))
	}
	resp, err := httpc.Do(req)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close() //nolint:errcheck // read only
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("status %q: %w", b, err)
	}
	return s, nil
}

// waitReady polls /readyz until it answers 200.
func (p *proc) waitReady(t *testing.T, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, "instance at "+p.statusAddr+" ready", func() error {
		select {
		case <-p.done:
			t.Fatalf("manager exited before it was ready: %v", p.err)
		default:
		}
		resp, err := httpc.Get("http://" + p.statusAddr + "/readyz")
		if err != nil {
			return err
		}
		defer resp.Body.Close() //nolint:errcheck // read only
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz %d: %s", resp.StatusCode, b)
		}
		return nil
	})
}
