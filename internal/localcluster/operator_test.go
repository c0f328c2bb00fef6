package localcluster

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
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

// Environment of the fake operator beyond its mode: a file whose presence makes it fail
// at start, a file it appends its start time to, and the cluster it must keep reaching.
const (
	fakeFailFileEnv   = "LOCALCLUSTER_FAKE_FAIL_FILE"
	fakeStartsFileEnv = "LOCALCLUSTER_FAKE_STARTS"
)

// fakeOperator accepts controller-runtime's flags and serves /readyz after a short
// delay, or exits at once when mode is "fail" (or the file in fakeFailFileEnv exists).
// In mode "lease" it also needs its --kubeconfig's API server, as the portal and an
// operator holding a lease do: it exits when the server does not answer at start or
// stops answering for two seconds.
func fakeOperator(mode string) {
	fs := flag.NewFlagSet("fake", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "")
	health := fs.String("health-probe-bind-address", "", "")
	metrics := fs.String("metrics-bind-address", "", "")
	fs.Bool("leader-elect", false, "")
	_ = fs.Parse(os.Args[1:])
	fmt.Printf("fake operator: kubeconfig=%s health=%s metrics=%s\n", *kubeconfig, *health, *metrics)
	if f := os.Getenv(fakeStartsFileEnv); f != "" {
		appendLine(f, strconv.FormatInt(time.Now().UnixNano(), 10))
	}
	if f := os.Getenv(fakeFailFileEnv); mode == "fail" || (f != "" && fileExists(f)) {
		fmt.Println("fake operator: cannot reach the cluster")
		os.Exit(3)
	}
	if mode == "lease" {
		go holdAPIServer(*kubeconfig)
	}
	started := time.Now()
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if time.Since(started) < 300*time.Millisecond || (mode == "lease" && !reachedAPIServer.Load()) {
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

// reachedAPIServer is set once holdAPIServer got an answer.
var reachedAPIServer atomic.Bool

// holdAPIServer exits the process once the API server has not answered /readyz for two
// seconds, as a leader that cannot renew its lease does.
func holdAPIServer(kubeconfig string) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		fmt.Println("fake operator:", err)
		os.Exit(1)
	}
	cfg.Timeout = time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Println("fake operator:", err)
		os.Exit(1)
	}
	lastOK := time.Now()
	for {
		if _, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background()); err == nil {
			lastOK = time.Now()
			reachedAPIServer.Store(true)
		} else if time.Since(lastOK) > 2*time.Second {
			fmt.Printf("fake operator: lost the API server: %v\n", err)
			os.Exit(1)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	_, _ = fmt.Fprintln(f, line)
	_ = f.Close()
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
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
