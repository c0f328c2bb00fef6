package localcluster

import (
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeOperatorEnv makes the test binary act as an operator (see TestMain), so
// StartOperator is tested without building one.
const fakeOperatorEnv = "LOCALCLUSTER_FAKE_OPERATOR"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeOperatorEnv); mode != "" {
		fakeOperator(mode)
		return
	}
	os.Exit(m.Run())
}

// fakeOperator accepts controller-runtime's flags and serves /readyz after a short
// delay, or exits at once when mode is "fail".
func fakeOperator(mode string) {
	fs := flag.NewFlagSet("fake", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "")
	health := fs.String("health-probe-bind-address", "", "")
	metrics := fs.String("metrics-bind-address", "", "")
	fs.Bool("leader-elect", false, "")
	_ = fs.Parse(os.Args[1:])
	fmt.Printf("fake operator: kubeconfig=%s health=%s metrics=%s\n", *kubeconfig, *health, *metrics)
	if mode == "fail" {
		fmt.Println("fake operator: cannot reach the cluster")
		os.Exit(3)
	}
	started := time.Now()
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if time.Since(started) < 300*time.Millisecond {
			http.Error(w, "informers not synced", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "ok")
	})
	go func() { _ = http.ListenAndServe(*health, mux) }()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	<-sig
	fmt.Println("fake operator: stopping")
}

func TestStartOperatorWaitsForReadyz(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "mooring.log")
	op, err := StartOperator(t.Context(), OperatorOptions{
		Binary:     os.Args[0],
		Kubeconfig: "/some/kubeconfig",
		LogPath:    logPath,
		Env:        []string{fakeOperatorEnv + "=serve"},
	})
	if err != nil {
		t.Fatalf("StartOperator: %v", err)
	}
	resp, err := http.Get(op.ReadyzURL())
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("readyz after StartOperator returned: %v %v", resp, err)
	}
	_ = resp.Body.Close()
	pid := op.Pid()
	if err := op.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("operator pid %d still exists after Stop (kill -0: %v)", pid, err)
	}
	log, _ := os.ReadFile(logPath)
	for _, want := range []string{"kubeconfig=/some/kubeconfig", "health=" + op.HealthAddr, "metrics=" + op.MetricsAddr, "fake operator: stopping"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("operator log lacks %q:\n%s", want, log)
		}
	}
}

func TestStartOperatorReportsExit(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "mooring.log")
	_, err := StartOperator(t.Context(), OperatorOptions{
		Binary:  os.Args[0],
		LogPath: logPath,
		Env:     []string{fakeOperatorEnv + "=fail"},
	})
	if err == nil {
		t.Fatal("StartOperator succeeded with an operator that exits at once")
	}
	for _, want := range []string{"exit status 3", logPath, "cannot reach the cluster"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
