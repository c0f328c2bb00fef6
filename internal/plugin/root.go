package plugin

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/internal/objecttree"
	"github.com/mooringhq/mooring/internal/version"
)

// Scheme knows the kinds a status tree reads (objecttree's: the built-in kinds, Mooring's
// API, the Gateway API's HTTPRoutes), and the CRDs and webhook configurations doctor reads.
var Scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(objecttree.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(admissionv1.AddToScheme(s))
	return s
}()

// Options is what every command shares: streams, kubeconfig flags, the clock.
type Options struct {
	Streams genericiooptions.IOStreams
	Config  *genericclioptions.ConfigFlags
	// Now is the clock ages are measured against; time.Now when nil.
	Now func() time.Time
	// BeforeRender, when set, sees every status tree before it is printed; tests use it
	// to fix times and generated names so that outputs can be compared with golden files.
	BeforeRender func([]*objecttree.Node)
	// Color is auto (only on a terminal), always or never.
	Color string
}

// NewOptions returns Options for the given streams with kubectl's connection flags.
func NewOptions(streams genericiooptions.IOStreams) *Options {
	return &Options{Streams: streams, Config: genericclioptions.NewConfigFlags(true), Color: "auto"}
}

// NewRootCommand is `kubectl mooring`: its subcommands and the kubectl connection flags
// (--kubeconfig, --context, -n, ...). Shell completion comes from cobra's `completion`.
func NewRootCommand(o *Options) *cobra.Command {
	root := &cobra.Command{
		Use:           "kubectl-mooring",
		Short:         "Inspect and operate Mooring's Apps, CacheInstances, DatabaseClusters and Backups",
		Long:          "kubectl mooring shows Mooring objects as trees of what they own, triggers backups,\npauses, resumes and re-reconciles objects, and checks the installation (doctor).",
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl mooring"},
		Version:       version.String(),
	}
	// --version without cobra's -v shorthand, which kubectl users read as verbosity.
	root.Flags().Bool("version", false, "Print the plugin's version (`version` also asks the operator's).")
	root.SetVersionTemplate("kubectl-mooring {{.Version}}\n")
	root.SetIn(o.Streams.In)
	root.SetOut(o.Streams.Out)
	root.SetErr(o.Streams.ErrOut)
	o.Config.AddFlags(root.PersistentFlags())
	root.PersistentFlags().StringVar(&o.Color, "color", o.Color, "Colour the output: auto (only on a terminal), always or never.")
	root.AddCommand(
		newStatusCommand(o),
		newBackupCommand(o),
		newPauseCommand(o, true),
		newPauseCommand(o, false),
		newReconcileCommand(o),
		newDoctorCommand(o),
		newVersionCommand(o),
	)
	return root
}

// now reads the clock.
func (o *Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// restConfig is the cluster the flags point at.
func (o *Options) restConfig() (*rest.Config, error) {
	cfg, err := o.Config.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return cfg, nil
}

// client is a client for the cluster the flags point at.
func (o *Options) client() (client.Client, error) {
	cfg, err := o.restConfig()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: Scheme})
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	return c, nil
}

// namespace is -n, or the kubeconfig context's namespace.
func (o *Options) namespace() (string, error) {
	ns, _, err := o.Config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("namespace: %w", err)
	}
	return ns, nil
}

// color reports whether to colour the output.
func (o *Options) color() bool {
	switch o.Color {
	case "always":
		return true
	case "never":
		return false
	}
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	f, ok := o.Streams.Out.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
