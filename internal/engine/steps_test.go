package engine

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestRunStepsStopsAtTheFirstStepThatEndsTheFlow(t *testing.T) {
	var ran []string
	step := func(name string, v Verdict, err error) Step {
		return func(context.Context) (Verdict, error) { ran = append(ran, name); return v, err }
	}
	boom := errors.New("boom")
	tests := map[string]struct {
		steps    []Step
		want     Verdict
		wantErr  error
		wantRan  int
		wantDone bool
	}{
		"all pass":      {steps: []Step{step("a", Next, nil), step("b", Next, nil)}, want: Next, wantRan: 2},
		"done":          {steps: []Step{step("a", Next, nil), step("b", Done(), nil), step("c", Next, nil)}, want: Done(), wantRan: 2, wantDone: true},
		"wait a while":  {steps: []Step{step("a", Wait(time.Second), nil), step("b", Done(), nil)}, want: Wait(time.Second), wantRan: 1},
		"error stops":   {steps: []Step{step("a", Next, boom), step("b", Done(), nil)}, want: Next, wantErr: boom, wantRan: 1},
		"wait an event": {steps: []Step{step("a", Wait(0), nil), step("b", Done(), nil)}, want: Wait(0), wantRan: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ran = nil
			got, err := RunSteps(context.Background(), tc.steps...)
			if got != tc.want || !errors.Is(err, tc.wantErr) || len(ran) != tc.wantRan || got.Done() != tc.wantDone {
				t.Errorf("verdict %+v err %v ran %v; want %+v err %v after %d steps", got, err, ran, tc.want, tc.wantErr, tc.wantRan)
			}
		})
	}
	if r := Wait(5 * time.Second).Result(); r.RequeueAfter != 5*time.Second {
		t.Errorf("Wait(5s).Result() = %+v", r)
	}
}
