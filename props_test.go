package pgqcheck_test

import (
	"context"
	"flag"
	"os"
	"strconv"
	"testing"

	"pgregory.net/rapid"

	"pgqcheck/program"
	"pgqcheck/sut"
	"pgqcheck/sut/suttest"
)

// Sessions per property run: enough workers for one to hold a stale token while another
// reclaims, and lockers to hold two rows at once.
const (
	propWorkers = 3
	propLockers = 2
)

// TestPropQueue drives the model and the real queue side by side, one operation at a time,
// for every queue under judgement (the built-ins, or PGQCHECK_SQL_DIR alone).
func TestPropQueue(t *testing.T) {
	for _, q := range suttest.Queues(t) {
		t.Run(q.Name, func(t *testing.T) { propQueue(t, q, false) })
	}
}

// TestPropLeaseTime adds claims with a real one-second lease, completed at once or after a pause
// past it: leases must be computed from and compared with the database clock (property 8).
// Each late completion costs a real pause, hence a property of its own with fewer checks.
func TestPropLeaseTime(t *testing.T) {
	for _, q := range suttest.Queues(t) {
		t.Run(q.Name, func(t *testing.T) { propQueue(t, q, true) })
	}
}

func propQueue(t *testing.T, q *sut.Queue, realTime bool) {
	ctx := context.Background()
	env := newEnv(t, q)
	prop := func(rt *rapid.T) {
		if err := env.Reset(ctx); err != nil {
			rt.Fatal(err)
		}
		rt.Repeat(program.StateMachine(ctx, env, realTime))
	}
	if realTime {
		// Each run may pause 1.5 s a few times: a fifth of the checks, unless the user chose.
		defer fewerChecks(5)()
	}
	rapid.Check(t, prop)
}

func newEnv(t testing.TB, q *sut.Queue) *program.Env {
	in := suttest.Install(t, q)
	env, err := program.NewEnv(context.Background(), in, propWorkers, propLockers)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	return env
}

// fewerChecks divides rapid's number of checks by n for one property, unless -rapid.checks was
// given on the command line, and returns the function that restores it.
func fewerChecks(n int) (restore func()) {
	f := flag.Lookup("rapid.checks")
	set := false
	flag.Visit(func(v *flag.Flag) { set = set || v.Name == "rapid.checks" })
	old, err := strconv.Atoi(f.Value.String())
	if set || err != nil || os.Getenv("RAPID_CHECKS") != "" {
		return func() {}
	}
	_ = f.Value.Set(strconv.Itoa(max(1, old/n)))
	return func() { _ = f.Value.Set(strconv.Itoa(old)) }
}
