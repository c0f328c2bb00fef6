package cluster

import (
	"context"
	"encoding/json"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// DoRaw is req.DoRaw with the API server's own error. DoRaw makes its error from the
// status code alone ("unknown (get apps.mooring.dev web)", "the server could not find
// the requested resource"), although the body it returns with it is the API server's
// Status, with its reason, message and causes: the error is made from that instead, so
// a raw read fails with the same words as any other call. The body is decoded only on
// an error, so a read costs what it did.
func DoRaw(ctx context.Context, req *rest.Request) ([]byte, error) {
	raw, err := req.DoRaw(ctx)
	if err == nil {
		return raw, nil
	}
	var st metav1.Status
	if json.Unmarshal(raw, &st) == nil && st.Kind == "Status" && st.Status == metav1.StatusFailure {
		return nil, &apierrors.StatusError{ErrStatus: st}
	}
	return nil, err
}
