package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// newPauseCommand is `pause` (pause=true) or `resume`.
func newPauseCommand(o *Options, pause bool) *cobra.Command {
	var timeout time.Duration
	use, short := "resume KIND/NAME", "Let Mooring manage the object again (removes "+mooringv1.PausedAnnotation+")"
	if pause {
		use, short = "pause KIND/NAME", "Stop Mooring from changing the object and its children ("+mooringv1.PausedAnnotation+"=true)"
	}
	cmd := &cobra.Command{
		Use:               use,
		Short:             short,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeRef(""),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.runPause(cmd.Context(), args[0], pause, timeout)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "How long to wait for Mooring to report the change (its Paused condition); 0 does not wait.")
	return cmd
}

func (o *Options) runPause(ctx context.Context, arg string, pause bool, timeout time.Duration) error {
	c, r, obj, err := o.getRef(ctx, arg)
	if err != nil {
		return err
	}
	key := client.ObjectKeyFromObject(obj)
	verb := "resumed"
	var val any // nil removes the annotation in a merge patch
	if pause {
		verb, val = "paused", "true"
	}
	if (obj.GetAnnotations()[mooringv1.PausedAnnotation] == "true") == pause {
		fmt.Fprintf(o.Streams.Out, "%s is already %s\n", r, verb)
	} else {
		if err := annotate(ctx, c, obj, mooringv1.PausedAnnotation, val); err != nil {
			return fmt.Errorf("%s %s: %w", verb, r, err)
		}
		fmt.Fprintf(o.Streams.Out, "%s %s\n", r, verb)
	}
	if timeout <= 0 {
		return nil
	}
	// Mooring confirms through the Paused condition: set while paused, gone once resumed.
	var last *metav1.Condition
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, key, obj); err != nil {
			return false, err
		}
		last = meta.FindStatusCondition(conditionsOf(obj), mooringv1.ConditionPaused)
		return (last != nil && last.Status == metav1.ConditionTrue) == pause, nil
	})
	if err != nil {
		return fmt.Errorf("the operator has not confirmed that %s is %s within %s (is it running? try `kubectl mooring doctor`)", r, verb, timeout)
	}
	if pause {
		fmt.Fprintf(o.Streams.Out, "Mooring confirmed: condition Paused=True (%s)\n", last.Reason)
	} else {
		fmt.Fprintf(o.Streams.Out, "Mooring confirmed: condition Paused removed\n")
	}
	return nil
}

// annotate sets (or, with nil, removes) one annotation with a merge patch.
func annotate(ctx context.Context, c client.Client, obj client.Object, key string, val any) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: val}}})
	if err != nil {
		return err
	}
	return c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch))
}

// conditionsOf returns the status conditions of a Mooring object.
func conditionsOf(obj client.Object) []metav1.Condition {
	if s, ok := obj.(interface{ StatusConditions() *[]metav1.Condition }); ok {
		return *s.StatusConditions()
	}
	return nil
}

func newReconcileCommand(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:   "reconcile KIND/NAME",
		Short: "Ask Mooring to reconcile the object now (" + mooringv1.ReconcileRequestedAnnotation + ")",
		Long: "Ask Mooring to reconcile the object now. The annotation " + mooringv1.ReconcileRequestedAnnotation + " is set to the\n" +
			"current time; like any annotation change it wakes the object's controller, which then\n" +
			"repairs children that drifted and re-derives status.",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeRef(""),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, r, obj, err := o.getRef(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			// Nanoseconds, so two requests within a second are two changes.
			at := o.now().UTC().Format(time.RFC3339Nano)
			if err := annotate(cmd.Context(), c, obj, mooringv1.ReconcileRequestedAnnotation, at); err != nil {
				return fmt.Errorf("request reconcile of %s: %w", r, err)
			}
			if obj.GetAnnotations()[mooringv1.PausedAnnotation] == "true" {
				fmt.Fprintf(o.Streams.Out, "%s reconcile requested at %s; it is paused, so Mooring will change nothing until resumed\n", r, at)
				return nil
			}
			fmt.Fprintf(o.Streams.Out, "%s reconcile requested at %s\n", r, at)
			return nil
		},
	}
}

// getRef reads the object a KIND/NAME argument names in the selected namespace, with the
// client it was read with (pause, resume and reconcile then annotate it).
func (o *Options) getRef(ctx context.Context, arg string) (client.Client, ref, client.Object, error) {
	r, err := parseRef(arg)
	if err != nil {
		return nil, r, nil, err
	}
	c, err := o.client()
	if err != nil {
		return nil, r, nil, err
	}
	ns, err := o.namespace()
	if err != nil {
		return nil, r, nil, err
	}
	obj := r.kind.newObj()
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: r.name}, obj); err != nil {
		return nil, r, nil, fmt.Errorf("get %s: %w", r, err)
	}
	return c, r, obj, nil
}
