package neoq

import (
	"testing"

	"github.com/pgqcheck/pgqcheck/internal/deploy"
	"github.com/pgqcheck/pgqcheck/internal/deploy/deploytest"
)

// TestDeployed is neoq v0.72.2 as deployed, its postgres backend under stalls, kills and cuts: a job's
// lock is neoq's own transaction, open while the handler runs, so a stalled worker keeps it and
// a killed or cut one loses it: every promise holds, and the faults bit (a job ran again).
func TestDeployed(t *testing.T) {
	res := deploytest.Run(t, "neoq", deploy.Config{Faults: []deploy.FaultKind{deploy.Stall, deploy.Kill, deploy.Cut}, Seed: 1})
	if !res.OK() {
		t.Fatalf("neoq failed as deployed: %s", res.FirstText())
	}
	if res.Executions <= res.Enqueued {
		t.Errorf("%d executions of %d jobs: no fault took a job from its worker", res.Executions, res.Enqueued)
	}
}
