package database

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/mooringhq/mooring/api/v1beta1"
)

// The probes ask the server, not its TCP port: readiness and startup run the engine's
// client check against 127.0.0.1, the startup probe allows a long recovery or upgrade,
// and liveness, which Kubernetes starts only after the startup probe succeeded, fails
// only when the server does not answer at all.
func TestProbes(t *testing.T) {
	for _, e := range []v1beta1.DatabaseEngine{v1beta1.PostgreSQL, v1beta1.MySQL} {
		t.Run(string(e), func(t *testing.T) {
			sts, err := StatefulSet(newDB(e, func(d *v1beta1.DatabaseCluster) { d.Spec.Version = "8.4" }))
			if err != nil {
				t.Fatal(err)
			}
			c := sts.Spec.Template.Spec.Containers[0]
			probes := map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "startup": c.StartupProbe, "liveness": c.LivenessProbe}
			for name, p := range probes {
				if p == nil {
					t.Fatalf("no %s probe", name)
				}
				if p.TCPSocket != nil || p.Exec == nil || len(p.Exec.Command) != 3 || p.Exec.Command[0] != "/bin/sh" {
					t.Errorf("%s probe %+v, want an exec of /bin/sh -c", name, p.ProbeHandler)
					continue
				}
				script := p.Exec.Command[2]
				// MySQL's image runs its set-up server on 127.0.0.1 only: the probes
				// must reach the server where clients do.
				host := map[v1beta1.DatabaseEngine]string{v1beta1.PostgreSQL: "--host=127.0.0.1", v1beta1.MySQL: `--host="$POD_IP"`}[e]
				if !strings.Contains(script, host) {
					t.Errorf("%s probe %q does not connect with %s", name, script, host)
				}
				// The only credential is taken from the environment by name.
				if strings.Contains(script, " -p") || strings.Contains(script, "--password") {
					t.Errorf("%s probe %q passes a password on the command line", name, script)
				}
				if p.TimeoutSeconds <= 5 {
					t.Errorf("%s probe timeout %ds, want more than the scripts' 5 s connect timeout", name, p.TimeoutSeconds)
				}
			}
			if budget := c.StartupProbe.PeriodSeconds * c.StartupProbe.FailureThreshold; budget < 30*60 {
				t.Errorf("startup probe allows %ds, want at least 30 minutes for recovery or an upgrade", budget)
			}
			if c.LivenessProbe.InitialDelaySeconds != 0 {
				t.Errorf("liveness waits %ds; the startup probe is what delays it", c.LivenessProbe.InitialDelaySeconds)
			}
			if c.StartupProbe.Exec.Command[2] != c.ReadinessProbe.Exec.Command[2] {
				t.Errorf("startup probe %q is not the readiness check %q", c.StartupProbe.Exec.Command[2], c.ReadinessProbe.Exec.Command[2])
			}
		})
	}
}

// The probe scripts run here with a stand-in pg_isready that answers with the exit status
// the test chooses: 0 accepting, 1 rejecting (recovery), 2 no response.
func TestPostgreSQLProbeScripts(t *testing.T) {
	sts, err := StatefulSet(newDB(v1beta1.PostgreSQL, nil))
	if err != nil {
		t.Fatal(err)
	}
	c := sts.Spec.Template.Spec.Containers[0]
	bin := t.TempDir()
	argsFile := filepath.Join(bin, "args")
	fake := "#!/bin/sh\necho \"$*\" >" + argsFile + "\nexit \"$PG_ISREADY_RC\"\n"
	if err := os.WriteFile(filepath.Join(bin, "pg_isready"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		rc           string
		ready, alive bool
	}{
		{"0", true, true},   // accepting connections
		{"1", false, true},  // starting up or recovering: not ready, but not to be killed
		{"2", false, false}, // no answer
		{"3", false, false}, // no attempt made
	} {
		ready := probeRuns(t, c.ReadinessProbe, bin, "PG_ISREADY_RC="+tt.rc)
		alive := probeRuns(t, c.LivenessProbe, bin, "PG_ISREADY_RC="+tt.rc)
		if ready != tt.ready || alive != tt.alive {
			t.Errorf("pg_isready exit %s: ready %v alive %v, want %v %v", tt.rc, ready, alive, tt.ready, tt.alive)
		}
	}
	args, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(args), "--host=127.0.0.1 --port=5432") {
		t.Errorf("pg_isready was given %q", args)
	}
}

// mysqladmin gets the root password through MYSQL_PWD, copied from the container's
// MYSQL_ROOT_PASSWORD, and never among its arguments; it pings the pod's own address
// (POD_IP, from the downward API), not 127.0.0.1, where the image's temporary set-up
// server answers while clients cannot connect.
func TestMySQLProbeScripts(t *testing.T) {
	sts, err := StatefulSet(newDB(v1beta1.MySQL, func(d *v1beta1.DatabaseCluster) { d.Spec.Version = "8.4" }))
	if err != nil {
		t.Fatal(err)
	}
	c := sts.Spec.Template.Spec.Containers[0]
	podIP := false
	for _, e := range c.Env {
		podIP = podIP || (e.Name == "POD_IP" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.podIP")
	}
	if !podIP {
		t.Errorf("the container has no POD_IP from status.podIP: %+v", c.Env)
	}
	const password = "r00t-Pa55 'quoted'"
	bin := t.TempDir()
	fake := `#!/bin/sh
case "$*" in *"$MYSQL_PWD"*) echo "password among the arguments" >&2; exit 5 ;; esac
[ "$MYSQL_PWD" = "` + password + `" ] || { echo "MYSQL_PWD not set from MYSQL_ROOT_PASSWORD" >&2; exit 6; }
[ "$*" = "ping --host=10.1.2.3 --port=3306 --user=root --connect-timeout=5 --silent" ] || { echo "arguments $*" >&2; exit 7; }
exit "$MYSQLADMIN_RC"
`
	if err := os.WriteFile(filepath.Join(bin, "mysqladmin"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if !probeRuns(t, p, bin, "MYSQL_ROOT_PASSWORD="+password, "POD_IP=10.1.2.3", "MYSQLADMIN_RC=0") {
			t.Errorf("%s fails with a server that answers", name)
		}
		if probeRuns(t, p, bin, "MYSQL_ROOT_PASSWORD="+password, "POD_IP=10.1.2.3", "MYSQLADMIN_RC=1") {
			t.Errorf("%s passes with a server that does not answer", name)
		}
	}
}

// probeRuns runs an exec probe's command with only bin on PATH and env, and reports
// whether it succeeded.
func probeRuns(t *testing.T, p *corev1.Probe, bin string, env ...string) bool {
	t.Helper()
	if p == nil || p.Exec == nil {
		t.Fatalf("probe %+v does not run a command", p)
	}
	cmd := exec.Command(p.Exec.Command[0], p.Exec.Command[1:]...)
	cmd.Env = append([]string{"PATH=" + bin + ":/usr/bin:/bin"}, env...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run probe: %v", err)
	}
	if len(out) > 0 {
		t.Logf("probe output: %s", out)
	}
	return err == nil
}
