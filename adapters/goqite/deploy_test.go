package goqite_test

import (
	"os"
	"testing"

	"github.com/pgqcheck/pgqcheck/internal/deploy"
	"github.com/pgqcheck/pgqcheck/internal/deploy/deploytest"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

func TestMain(m *testing.M) { os.Exit(pgserver.Main(m)) }

// TestDeployed is goqite v0.4.0 on PostgreSQL as deployed, its job Runner under stalls, kills
// and cuts: a message whose timeout lapsed is received again, and the Runner's delete is its
// own transaction, so a job's effect at an outside destination can happen twice (measured:
// goqite promises at least once), while no job is lost and none runs before its time.
func TestDeployed(t *testing.T) {
	res := deploytest.Run(t, "goqite", deploy.Config{Faults: []deploy.FaultKind{deploy.Stall, deploy.Kill, deploy.Cut}, Seed: 1})
	if !res.OK() {
		t.Fatalf("goqite failed as deployed: %s", res.FirstText())
	}
	if res.Executions <= res.Enqueued {
		t.Errorf("%d executions of %d jobs: no fault took a job from its worker", res.Executions, res.Enqueued)
	}
	t.Logf("duplicate effects measured: %d", deploytest.NotPromised(res, int(model.PExternal)))
}
