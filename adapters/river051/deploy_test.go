package river051

import (
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/deploy"
	"github.com/pgqcheck/pgqcheck/internal/deploy/deploytest"
	"github.com/pgqcheck/pgqcheck/model"
)

// TestDeployedIgnoringContext is River v0.51.2 as deployed, with a user's typical settings and
// a handler that ignores its context: a worker stalled past RescueStuckJobsAfter resumes while
// the job it held, rescued, runs again elsewhere, and its JobCompleteTx completes the new
// attempt's row (not promised: River does not fence); the new attempt's own JobCompleteTx
// then answers success too (it returns the job whether or not it was still running), so the
// effect written in its transaction commits a second time. (River v0.47.0, whose completion is
// the same statement, shows the same in scripts/deploy-table.sh; one version's run is what the
// adapters lane has room for.)
func TestDeployedIgnoringContext(t *testing.T) {
	res := deploytest.Run(t, "river051-ignorectx", deploy.Config{Faults: []deploy.FaultKind{deploy.Stall}, Window: 60 * time.Second, Seed: 1})
	if deploytest.NotPromised(res, int(model.PFencing)) == 0 {
		t.Fatalf("no stale completion observed in %d executions under %s", res.Executions, res.Schedule.Summary())
	}
	if !res.Table().Violated[model.PEffects] {
		t.Fatalf("a stale completion was observed, and no job's effect committed twice")
	}
}
