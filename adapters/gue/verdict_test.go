package gue

import (
	"os"
	"testing"

	"github.com/pgqcheck/pgqcheck/adapters/judge"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

func TestMain(m *testing.M) { os.Exit(pgserver.Main(m)) }

// gue v5.8.0, as measured.
var want = judge.Want{}

func TestVerdicts(t *testing.T) { judge.Judge(t, Name, Version, nil, want) }

func TestCounterexamples(t *testing.T) { judge.Replay(t, Name, judge.CasesDir) }
