package river048

import (
	"os"
	"testing"

	"github.com/pgqcheck/pgqcheck/adapters/judge"
	"github.com/pgqcheck/pgqcheck/internal/campaign"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

func TestMain(m *testing.M) { os.Exit(pgserver.Main(m)) }

// River v0.48.0, as measured: a replaced worker's completion and failure are accepted (not
// promised); that failure is decided by the worker's own attempt, so a job rescued and fetched
// again at its last attempt is made retryable and runs once more than its max attempts; the
// rescuer waits for a job's row lock, which River does not promise it will not (measured).
var want = judge.Want{
	model.PSkipLocked:   campaign.StatusNotPromised,
	model.PFencing:      campaign.StatusNotPromised,
	model.PWriteFencing: campaign.StatusNotPromised,
	model.PRetries:      campaign.StatusViolated,
}

func TestVerdicts(t *testing.T) { judge.Judge(t, Name, "v0.48.0", nil, want) }

func TestCounterexamples(t *testing.T) { judge.Replay(t, Name, judge.CasesDir) }
