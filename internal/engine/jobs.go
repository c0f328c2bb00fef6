package engine

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/internal/jobstatus"
)

// A one-shot Job (a credentials change, a restore, a final snapshot, a cleanup) is made
// with CreateOnce under a name that stands for what it does, read back with Job, and its
// outcome read with JobPhase: the one answer to "did this Job finish or fail".

// JobPhase reads a Job's status: Pending, Running, Succeeded or Failed, with why it
// failed (jobstatus.Status.Failure).
func JobPhase(job *batchv1.Job) jobstatus.Status { return jobstatus.Of(job) }

// Job reads the Job name in the reconciled object's namespace from the cache: nil when
// there is none. Whether it is the one the caller made (its owner, its labels) is the
// caller's to check.
func (s *Scope[T]) Job(ctx context.Context, name string) (*batchv1.Job, error) {
	job := &batchv1.Job{}
	err := s.Client.Get(ctx, client.ObjectKey{Namespace: s.Object.GetNamespace(), Name: name}, job)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get Job %s: %w", name, err)
	}
	return job, nil
}
