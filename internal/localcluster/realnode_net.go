package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Mooring's own iptables chains in the filter table keep the pod network on the machine.
// servicesChain, jumped to first from OUTPUT and FORWARD, refuses at once (a TCP reset) a
// packet still addressed to the Service range after kube-proxy's NAT: it is for an
// address no Service has, or kube-proxy has not synced yet, and would otherwise wait on a
// bridge where nobody answers. forwardChain, jumped to first from FORWARD, lets pods talk
// to pods (including through a Service's NAT) and forwards nothing from the bridge
// anywhere else, nor anything from elsewhere onto it. Pods reach the host's own addresses
// (the API server, CoreDNS) through INPUT, which these chains do not touch.
const (
	servicesChain = "MOORING-SERVICES"
	forwardChain  = "MOORING-FORWARD"
)

// guardChains are the chains, their rules in order, and the built-in chains that jump to
// them first.
func guardChains() []guard {
	unreachable := []string{"-j", "REJECT", "--reject-with", "icmp-net-unreachable"}
	return []guard{
		// Empty until a fault adds rules (faults.go); first in every chain it hooks, so a
		// cut-off pod's packets are dropped before anything answers them.
		{name: faultChain, hooks: []string{"INPUT", "OUTPUT", "FORWARD"}},
		{name: servicesChain, hooks: []string{"OUTPUT", "FORWARD"}, rules: [][]string{
			{"-d", serviceCIDR, "-p", "tcp", "-j", "REJECT", "--reject-with", "tcp-reset"},
			append([]string{"-d", serviceCIDR}, unreachable...),
		}},
		{name: forwardChain, hooks: []string{"FORWARD"}, rules: [][]string{
			{"-i", bridgeName, "-o", bridgeName, "-j", "ACCEPT"},
			append([]string{"-i", bridgeName}, unreachable...),
			{"-o", bridgeName, "-j", "DROP"},
		}},
	}
}

// guard is one of Mooring's iptables chains.
type guard struct {
	name  string
	hooks []string
	rules [][]string
}

// unreachableRoutes are routed nowhere: the connected bridge subnet is more specific than
// the pod range, so only addresses no pod can have fail here, at once.
var unreachableRoutes = []string{podRange, kwokPodRange}

// sysctls the node needs, with the value it needs: forwarding between pods through the
// host (a Service's NAT), and iptables on bridged traffic (a reply from a pod to a pod
// that reached it through a ClusterIP must be translated back). Tear-down restores the
// values found.
var sysctls = map[string]string{
	"net/ipv4/ip_forward":                "1",
	"net/bridge/bridge-nf-call-iptables": "1",
}

// networkUp creates the bridge with every node's address (each the gateway of its
// node's pod subnet, so the host routes between the nodes' pods), the routes and the
// guard chain, and sets the sysctls, saving their old values in run/sysctl.
func networkUp(ctx context.Context, p nodePaths, nodes []member) error {
	steps := [][]string{{"ip", "link", "add", bridgeName, "type", "bridge"}}
	for _, m := range nodes {
		steps = append(steps, []string{"ip", "addr", "add", m.ip + "/24", "dev", bridgeName})
	}
	steps = append(steps,
		[]string{"ip", "link", "set", bridgeName, "up"},
		[]string{"ip", "route", "add", serviceCIDR, "dev", bridgeName, "src", nodeIP})
	for _, r := range unreachableRoutes {
		steps = append(steps, []string{"ip", "route", "add", "unreachable", r})
	}
	for _, s := range steps {
		if err := run(ctx, s...); err != nil {
			return err
		}
	}
	// The forward chain is hooked first so that the services chain, hooked last, ends up
	// first in FORWARD.
	chains := guardChains()
	for i := len(chains) - 1; i >= 0; i-- {
		g := chains[i]
		if err := run(ctx, "iptables", "-w", "-N", g.name); err != nil {
			return err
		}
		for _, r := range g.rules {
			if err := run(ctx, append([]string{"iptables", "-w", "-A", g.name}, r...)...); err != nil {
				return err
			}
		}
		for _, hook := range g.hooks {
			if err := run(ctx, "iptables", "-w", "-I", hook, "1", "-j", g.name); err != nil {
				return err
			}
		}
	}
	return setSysctls(p)
}

func setSysctls(p nodePaths) error {
	var saved []string
	for key, want := range sysctls {
		path := filepath.Join("/proc/sys", key)
		old, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		saved = append(saved, key+"="+strings.TrimSpace(string(old)))
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			return fmt.Errorf("set %s=%s: %w", key, want, err)
		}
	}
	return os.WriteFile(filepath.Join(p.run, "sysctl"), []byte(strings.Join(saved, "\n")+"\n"), 0o644)
}

// networkDown undoes networkUp and removes what kube-proxy installed. It goes on after
// a failed step, so that one missing piece does not leave the others behind, and
// ignores what is already gone.
func networkDown(ctx context.Context, p nodePaths, kubeProxy string) error {
	var errs []error
	if raw, err := os.ReadFile(filepath.Join(p.run, "sysctl")); err == nil {
		for line := range strings.Lines(string(raw)) {
			key, val, ok := strings.Cut(strings.TrimSpace(line), "=")
			if ok {
				if err := os.WriteFile(filepath.Join("/proc/sys", key), []byte(val), 0o644); err != nil {
					errs = append(errs, fmt.Errorf("restore %s: %w", key, err))
				}
			}
		}
	}
	for _, g := range guardChains() {
		for _, hook := range g.hooks {
			// A jump inserted twice (a start that failed halfway, then another) is removed
			// as often as it is there.
			for quiet(ctx, "iptables", "-w", "-D", hook, "-j", g.name) == nil {
			}
		}
		if quiet(ctx, "iptables", "-w", "-n", "-L", g.name) == nil {
			errs = appendErr(errs, run(ctx, "iptables", "-w", "-F", g.name))
			errs = appendErr(errs, run(ctx, "iptables", "-w", "-X", g.name))
		}
	}
	// kube-proxy leaves its chains when it stops; its own clean-up mode removes them.
	if kubeProxy != "" && hasKubeChains(ctx) {
		if out, err := exec.CommandContext(ctx, kubeProxy, "--cleanup").CombinedOutput(); err != nil && hasKubeChains(ctx) {
			errs = append(errs, fmt.Errorf("kube-proxy --cleanup: %w: %s", err, lastLine(out)))
		}
	}
	errs = append(errs, removeKubeletChains(ctx)...)
	for _, r := range unreachableRoutes {
		_ = quiet(ctx, "ip", "route", "del", "unreachable", r)
	}
	if quiet(ctx, "ip", "link", "show", bridgeName) == nil {
		errs = appendErr(errs, run(ctx, "ip", "link", "del", bridgeName))
	}
	return errors.Join(errs...)
}

// kubeletChains are the iptables chains the kubelet makes (its canary, which tells it
// when the rules were flushed, the hint of the iptables backend, and the firewall of the
// loopback range) and never removes.
var kubeletChains = []string{"KUBE-FIREWALL", "KUBE-KUBELET-CANARY", "KUBE-IPTABLES-HINT"}

// iptablesTables are the tables the node's components write to.
var iptablesTables = []string{"filter", "nat", "mangle"}

// removeKubeletChains removes the kubelet's chains and the jumps to them.
func removeKubeletChains(ctx context.Context) []error {
	var errs []error
	for _, table := range iptablesTables {
		out, err := exec.CommandContext(ctx, "iptables", "-w", "-t", table, "-S").Output()
		if err != nil {
			continue
		}
		rules := strings.Split(string(out), "\n")
		for _, rule := range rules {
			f := strings.Fields(rule)
			if len(f) > 3 && f[0] == "-A" && slices.Contains(kubeletChains, f[len(f)-1]) && f[len(f)-2] == "-j" {
				errs = appendErr(errs, run(ctx, append([]string{"iptables", "-w", "-t", table, "-D"}, f[1:]...)...))
			}
		}
		for _, chain := range kubeletChains {
			if slices.Contains(rules, "-N "+chain) {
				errs = appendErr(errs, run(ctx, "iptables", "-w", "-t", table, "-F", chain))
				errs = appendErr(errs, run(ctx, "iptables", "-w", "-t", table, "-X", chain))
			}
		}
	}
	return errs
}

// hasKubeChains reports whether any table has a chain of kube-proxy's or the kubelet's.
func hasKubeChains(ctx context.Context) bool {
	for _, table := range iptablesTables {
		out, err := exec.CommandContext(ctx, "iptables", "-w", "-t", table, "-S").Output()
		if err == nil && strings.Contains(string(out), "-N KUBE-") {
			return true
		}
	}
	return false
}

// run runs a command and turns a failure into an error with its output.
func run(ctx context.Context, argv ...string) error {
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, lastLine(out))
	}
	return nil
}

// quiet runs a command whose failure is an answer (a check, or a removal of something
// that may be gone).
func quiet(ctx context.Context, argv ...string) error {
	return exec.CommandContext(ctx, argv[0], argv[1:]...).Run()
}

func lastLine(out []byte) string {
	s := strings.TrimSpace(string(out))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

func appendErr(errs []error, err error) []error {
	if err != nil {
		return append(errs, err)
	}
	return errs
}
