package objecttree

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1alpha1"
	"github.com/mooringhq/mooring/api/v1beta1"
)

// AddToScheme registers every kind a Snapshot reads: the built-in kinds, Mooring's API
// and the Gateway API's HTTPRoutes. Programs that need more kinds (the plugin's doctor
// reads CRDs and webhook configurations) add this to their own scheme.
func AddToScheme(s *runtime.Scheme) error {
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, mooringv1.AddToScheme, v1alpha1.AddToScheme, v1beta1.AddToScheme,
		// The Gateway API's HTTPRoutes of exposed Apps; registering them needs no CRD.
		gatewayv1.Install,
	} {
		if err := add(s); err != nil {
			return err
		}
	}
	return nil
}

// Scheme knows every kind a Snapshot reads, for clients that read one.
var Scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(AddToScheme(s))
	return s
}()
