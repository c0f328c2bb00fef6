package plugin

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/internal/objecttree"
)

// Verdict is the outcome of one doctor check.
type Verdict string

// Verdicts. Only Fail makes doctor exit non-zero.
const (
	Pass Verdict = "PASS"
	Warn Verdict = "WARN"
	Fail Verdict = "FAIL"
)

// Finding is the result of one check: what was checked, the verdict, what was seen, and
// on a warning or failure how to fix it.
type Finding struct {
	Check   string  `json:"check"`
	Verdict Verdict `json:"verdict"`
	Message string  `json:"message"`
	Fix     string  `json:"fix,omitempty"`
}

func pass(check, format string, a ...any) Finding {
	return Finding{Check: check, Verdict: Pass, Message: fmt.Sprintf(format, a...)}
}

func warn(check, fix, format string, a ...any) Finding {
	return Finding{Check: check, Verdict: Warn, Message: fmt.Sprintf(format, a...), Fix: fix}
}

func fail(check, fix, format string, a ...any) Finding {
	return Finding{Check: check, Verdict: Fail, Message: fmt.Sprintf(format, a...), Fix: fix}
}

// doctorEnv is what the checks read from.
type doctorEnv struct {
	c   client.Client
	cfg *rest.Config
	now time.Time
	// namespace is where the sample objects are dry-run created.
	namespace string
	// operatorNamespace holds the operator's Deployment, the leader lease and the
	// certificate Secret: --operator-namespace, else found (findOperatorNamespace).
	operatorNamespace string
	secretName        string
	// serving is the webhook serving certificate, once a check has found it.
	serving *servingCert
}

// doctorChecks run in order; later ones may use what earlier ones found (env.serving).
var doctorChecks = []func(context.Context, *doctorEnv) []Finding{
	checkCRDs,
	checkWebhooks,
	checkCertificate,
	checkOperator,
	checkSamples,
	checkConversion,
	checkVersions,
}

func newDoctorCommand(o *Options) *cobra.Command {
	env := &doctorEnv{}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the Mooring installation and say what is wrong and how to fix it",
		Long: "Check the installation: CRDs and their stored versions, webhook configurations and\n" +
			"their CA bundle against the serving certificate, certificate expiry, the operator\n" +
			"(leader lease, Deployment), a server-side dry-run of each sample through the webhooks,\n" +
			"a DatabaseCluster conversion round trip, and versions. Exits non-zero if a check fails.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if env.cfg, err = o.restConfig(); err != nil {
				return err
			}
			if env.c, err = o.client(); err != nil {
				return err
			}
			if env.namespace, err = o.namespace(); err != nil {
				return err
			}
			env.now = o.now()
			var findings []Finding
			if env.operatorNamespace == "" {
				ns, how, ambiguous := findOperatorNamespace(cmd.Context(), env.c)
				env.operatorNamespace = ns
				if ambiguous {
					findings = append(findings, warn("operator namespace", "pass --operator-namespace", "%s (%s)", ns, how))
				} else {
					findings = append(findings, pass("operator namespace", "%s (%s)", ns, how))
				}
			}
			findings = append(findings, runDoctor(cmd.Context(), env)...)
			failed := writeFindings(o.Streams.Out, findings, o.color())
			if failed > 0 {
				return fmt.Errorf("%d of %d checks failed", failed, len(findings))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&env.operatorNamespace, "operator-namespace", "", operatorNamespaceUsage)
	cmd.Flags().StringVar(&env.secretName, "webhook-secret", "mooring-webhook-server-cert", "Secret holding the webhook serving certificate (the operator's --webhook-secret-name).")
	return cmd
}

// runDoctor runs every check.
func runDoctor(ctx context.Context, env *doctorEnv) []Finding {
	var out []Finding
	for _, check := range doctorChecks {
		out = append(out, check(ctx, env)...)
	}
	return out
}

// writeFindings prints one line per finding, the fix under it, and a summary; it returns
// how many failed.
func writeFindings(w io.Writer, findings []Finding, color bool) int {
	var b strings.Builder
	counts := map[Verdict]int{}
	width := 0
	for _, f := range findings {
		width = max(width, len(f.Check))
	}
	for _, f := range findings {
		counts[f.Verdict]++
		st := map[Verdict]objecttree.State{Pass: objecttree.StateOK, Warn: objecttree.StateWarning, Fail: objecttree.StateError}[f.Verdict]
		fmt.Fprintf(&b, "%s  %-*s  %s\n", paint(string(f.Verdict), st, color), width, f.Check, f.Message)
		if f.Fix != "" && f.Verdict != Pass {
			fmt.Fprintf(&b, "      %-*s  fix: %s\n", width, "", f.Fix)
		}
	}
	fmt.Fprintf(&b, "\n%d checks: %d passed, %d warnings, %d failed\n", len(findings), counts[Pass], counts[Warn], counts[Fail])
	_, _ = io.WriteString(w, b.String())
	return counts[Fail]
}
