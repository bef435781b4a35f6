package gue

import (
	"testing"

	"github.com/pgqcheck/pgqcheck/internal/deploy"
	"github.com/pgqcheck/pgqcheck/internal/deploy/deploytest"
)

// TestDeployed is gue v5.8.0 as deployed, its WorkerPool under stalls, kills and cuts: a job's
// lock is its worker's transaction, so a stalled worker keeps it, a killed or cut one loses it
// and its completion with it, and the effect written in the job's transaction commits exactly
// when the completion does: every promise holds, and the faults bit (a job ran again).
func TestDeployed(t *testing.T) {
	res := deploytest.Run(t, "gue", deploy.Config{Faults: []deploy.FaultKind{deploy.Stall, deploy.Kill, deploy.Cut}, Seed: 1})
	if !res.OK() {
		t.Fatalf("gue failed as deployed: %s", res.FirstText())
	}
	if res.Executions <= res.Enqueued {
		t.Errorf("%d executions of %d jobs: no fault took a job from its worker", res.Executions, res.Enqueued)
	}
}
