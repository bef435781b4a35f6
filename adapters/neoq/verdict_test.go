package neoq

import (
	"os"
	"testing"

	"github.com/pgqcheck/pgqcheck/adapters/judge"
	"github.com/pgqcheck/pgqcheck/internal/campaign"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

func TestMain(m *testing.M) { os.Exit(pgserver.Main(m)) }

// neoq v0.72.2, as measured: with MaxRetries 0, a job whose handler succeeded is moved to the
// dead jobs (updateJob decides by the retry count before it looks at the handler's result).
var want = map[string]judge.Want{
	Name:          {},
	NoRetriesName: {model.PRetries: campaign.StatusViolated},
}

func TestVerdicts(t *testing.T) {
	for _, name := range []string{Name, NoRetriesName} {
		t.Run(name, func(t *testing.T) { judge.Judge(t, name, Version, nil, want[name]) })
	}
}

func TestCounterexamples(t *testing.T) {
	for _, name := range []string{Name, NoRetriesName} {
		t.Run(name, func(t *testing.T) { judge.Replay(t, name, judge.CasesDir) })
	}
}
