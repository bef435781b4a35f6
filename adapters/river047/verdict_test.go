package river047

import (
	"os"
	"testing"

	"github.com/pgqcheck/pgqcheck/adapters/judge"
	"github.com/pgqcheck/pgqcheck/internal/campaign"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

func TestMain(m *testing.M) { os.Exit(pgserver.Main(m)) }

// River v0.47.0, as measured: a replaced worker's completion and failure are accepted (not
// promised); the rescuer makes a job that completed after its fetch available again, and it is
// completed a second time (River issue 1302), or, at its last attempt, discarded though it
// completed; a replaced worker's failure, decided by its own attempt, makes a job at its last
// attempt retryable, and it runs once more than its max attempts; the rescuer waits for a job's
// row lock, which River does not promise it will not (measured).
var want = judge.Want{
	model.PSkipLocked:   campaign.StatusNotPromised,
	model.PFencing:      campaign.StatusNotPromised,
	model.PWriteFencing: campaign.StatusNotPromised,
	model.PDoneOnce:     campaign.StatusViolated,
	model.PRetries:      campaign.StatusViolated,
}

func TestVerdicts(t *testing.T) { judge.Judge(t, Name, "v0.47.0", nil, want) }

func TestCounterexamples(t *testing.T) { judge.Replay(t, Name, judge.CasesDir) }
