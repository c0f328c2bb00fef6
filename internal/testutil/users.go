package testutil

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/mooringhq/mooring/internal/manager"
)

// User is a person the API server authenticates by a client certificate, with no rights
// but those RBAC gives their name and groups: admission sees their UserInfo as a real
// user's.
type User struct {
	Name string
	// Config and Client reach the API server as the user.
	Config *rest.Config
	Client client.Client
	// Kubeconfig is a kubeconfig file for the user, removed with the test.
	Kubeconfig string
}

// User adds a user named name in groups to the API server.
func (e *Env) User(t testing.TB, name string, groups ...string) User {
	t.Helper()
	e.Require(t)
	e.usersMu.Lock() // envtest adds users one at a time
	u, err := e.env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	e.usersMu.Unlock()
	if err != nil {
		t.Fatalf("add user %s: %v", name, err)
	}
	kc, err := u.KubeConfig()
	if err != nil {
		t.Fatalf("kubeconfig of %s: %v", name, err)
	}
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(u.Config(), client.Options{Scheme: manager.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return User{Name: name, Config: u.Config(), Client: c, Kubeconfig: path}
}

// Kubectl runs bin/k8s/kubectl as the user and returns its standard output and error
// output, and its error (a failed command does not fail the test).
func (u User) Kubectl(args ...string) (stdout, stderr string, err error) {
	cmd := exec.Command(filepath.Join(AssetsDir(), "kubectl"), append([]string{"--kubeconfig", u.Kubeconfig}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}
