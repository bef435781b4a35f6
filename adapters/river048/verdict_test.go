package river048

import (
	"os"
	"testing"

	"pgqcheck/adapters/judge"
	"pgqcheck/campaign"
	"pgqcheck/model"
	"pgqcheck/sut/pgserver"
)

func TestMain(m *testing.M) { os.Exit(pgserver.Main(m)) }

// River v0.48.0, as measured.
var want = judge.Want{
	model.PSkipLocked:   campaign.StatusViolated,
	model.PFencing:      campaign.StatusNotPromised,
	model.PWriteFencing: campaign.StatusNotPromised,
}

func TestVerdicts(t *testing.T) { judge.Judge(t, Name, "v0.48.0", nil, want) }

func TestCounterexamples(t *testing.T) { judge.Replay(t, Name, judge.CasesDir) }
