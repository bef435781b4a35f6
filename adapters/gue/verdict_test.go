package gue

import (
	"os"
	"testing"

	"pgqcheck/adapters/judge"
	"pgqcheck/sut/pgserver"
)

func TestMain(m *testing.M) { os.Exit(pgserver.Main(m)) }

// gue v5.8.0, as measured.
var want = judge.Want{}

// Stress mode is left out: under its injected faults (a cancel or a lost reply inside the
// claim's transaction) the adapter's record of which claim holds which job can part from the
// database's, and what it then reports is not yet told apart from what gue did.
var modes = []string{"sequential", "scheduled"}

func TestVerdicts(t *testing.T) { judge.Judge(t, Name, Version, modes, want) }

func TestCounterexamples(t *testing.T) { judge.Replay(t, Name, judge.CasesDir) }
