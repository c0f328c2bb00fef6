package plugin_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/mooringhq/mooring/internal/devenv"
	"github.com/mooringhq/mooring/internal/plugin"
	"github.com/mooringhq/mooring/internal/testutil/clusterenv"
)

// update rewrites the golden files: go test ./test/plugin -update
var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// suite is the package's own cluster: doctor's tests stop the operator and break the
// webhooks, which no other package may see.
var suite *clusterenv.Env

func TestMain(m *testing.M) {
	clusterenv.Main(m, &suite, clusterenv.Options{Name: "plugin", NoOperator: true})
}

// rollout bounds waits for workloads on kwok nodes; generous on a loaded machine.
const rollout = 90 * time.Second

// leaderRBAC grants the operator leader election once.
var leaderRBAC sync.Once

// operatorArgs run the operator with leader election, as in production, so doctor has a
// lease to read, and with controller-runtime's per-reconcile debug lines, so a test can
// see that one object was reconciled.
var operatorArgs = []string{"--leader-elect=true", "--leader-election-namespace=" + devenv.Namespace, "--zap-log-level=5"}

// ensureOperator starts the operator when it is not running (the suite starts without
// it), with leader election, and waits until the API server can call its webhooks.
func ensureOperator(t *testing.T) {
	t.Helper()
	leaderRBAC.Do(func() { grantLeaderElection(t) })
	suite.EnsureOperatorServing(t, operatorArgs...)
}

// grantLeaderElection binds config/rbac's leader election Role to the operator's
// ServiceAccount in mooring-system, as config/default does.
func grantLeaderElection(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join(suite.Root, "config", "rbac", "leader_election_role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.Role{}
	if err := yaml.UnmarshalStrict(data, role); err != nil {
		t.Fatalf("config/rbac/leader_election_role.yaml: %v", err)
	}
	role.ObjectMeta = metav1.ObjectMeta{Name: "mooring-" + role.Name, Namespace: devenv.Namespace}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "mooring-leader-election-rolebinding", Namespace: devenv.Namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: devenv.ServiceAccount, Namespace: devenv.Namespace}},
	}
	for _, o := range []client.Object{role, binding} {
		if err := suite.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create %T: %v", o, err)
		}
	}
}

// result is what one in-process run of the plugin printed.
type result struct {
	out, errOut string
	err         error
}

// run runs `kubectl mooring args...` in-process against the suite's cluster, as the admin.
func run(ctx context.Context, o *plugin.Options, args ...string) result {
	var out, errOut bytes.Buffer
	if o == nil {
		o = plugin.NewOptions(genericiooptions.IOStreams{})
	}
	o.Streams = genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	cmd := plugin.NewRootCommand(o)
	cmd.SetArgs(append([]string{"--kubeconfig", suite.Cluster.KubeconfigPath}, args...))
	err := cmd.ExecuteContext(ctx)
	return result{out: out.String(), errOut: errOut.String(), err: err}
}

// mustRun is run that fails the test when the command fails.
func mustRun(t *testing.T, o *plugin.Options, args ...string) string {
	t.Helper()
	r := run(context.Background(), o, args...)
	if r.err != nil {
		t.Fatalf("kubectl mooring %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.err, r.out, r.errOut)
	}
	return r.out
}

// sample reads a file of config/samples.
func sample(t *testing.T, file string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(suite.Root, "config", "samples", file))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// golden compares got with testdata/<name>, or rewrites it with -update.
func golden(name, got string) error {
	path := filepath.Join("testdata", name)
	if *update {
		return os.WriteFile(path, []byte(got), 0o644)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if string(want) != got {
		return fmt.Errorf("output differs from %s (go test ./test/plugin -update rewrites it)\n--- got:\n%s\n--- want:\n%s", path, got, want)
	}
	return nil
}
