package pgqcheck_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/pgqcheck/pgqcheck/internal/corpus"
	"github.com/pgqcheck/pgqcheck/internal/suite"
	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/sut"
)

var (
	reduceFor = flag.Duration("pgqcheck.reduce", suite.DefaultReduce, "how long a failure's program may be reduced after rapid's shrinking")
	stressFor = flag.Duration("linear.stress", suite.DefaultStressFor, "how long each Linear stress run's traffic runs")
)

// board collects what the suites found, queue by queue; TestMain prints it once every test has
// run.
var board = suite.NewBoard()

// suites is how this module's tests run the suites: on the queues under judgement, each in a
// database of its own on the process's server, failures saved into testdata/programs/found.
func suites() suite.Config {
	replay := "go test -run PropPrograms ."
	if dir := os.Getenv(sut.EnvSQLDir); dir != "" {
		replay = sut.EnvSQLDir + "=" + dir + " " + replay
	}
	return suite.Config{
		Install:     suttest.Install,
		Corpus:      filepath.Join(".", corpus.Dir, "found"),
		Replay:      replay,
		Reduce:      *reduceFor,
		StressFor:   *stressFor,
		Board:       board,
		BriefStress: os.Getenv(sut.EnvSQLDir) != "",
	}
}

// TestPropQueue drives the model and the real queue side by side, one operation at a time,
// for every queue under judgement (the built-ins, or PGQCHECK_SQL_DIR alone), each queue in a
// database of its own, side by side.
func TestPropQueue(t *testing.T) {
	for _, q := range suttest.Queues(t) {
		t.Run(q.Name, func(t *testing.T) {
			t.Parallel()
			suite.Sequential(t, q, suites(), false)
		})
	}
}

// TestPropLeaseTime adds real time: claims with leases of drawn length (100 ms to 1 s), pauses
// to just before or just after a lease's end followed by another worker's claim or the
// holder's completion, plain pauses, and claim transactions that wait before claiming and
// before completing (where now() and clock_timestamp() part). Pauses cost wall time, hence a
// property of its own with fewer checks, and queues judged side by side: a run mostly sleeps,
// each queue has a database of its own, and nothing depends on another's timing.
func TestPropLeaseTime(t *testing.T) {
	for _, q := range suttest.Queues(t) {
		t.Run(q.Name, func(t *testing.T) {
			t.Parallel()
			suite.Sequential(t, q, suites(), true)
		})
	}
}
