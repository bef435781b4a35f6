package pgqcheck_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

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
	// rapid ends a failed property with FailNow; the deferred report still runs, and env then
	// holds rapid's final replay of its shrunk case.
	defer func() {
		if t.Failed() {
			saveFinding(t, program.Reduced(ctx, env, t.Name(), ""), q)
		}
	}()
	rapid.Check(t, prop)
}

// saveFinding logs the reduced program and saves it where TestPropPrograms replays it on every
// `go test`: the regression corpus.
func saveFinding(t *testing.T, f *program.Finding, q *sut.Queue) {
	header := map[string]string{"queue": q.Source, "found by": t.Name(), "found": time.Now().UTC().Format(time.RFC3339)}
	replay := "go test -run PropPrograms ."
	if os.Getenv(sut.EnvSQLDir) != "" {
		replay = sut.EnvSQLDir + "=" + os.Getenv(sut.EnvSQLDir) + " " + replay
	}
	path := filepath.Join("testdata", "programs", "found", slug(t.Name())+"-"+time.Now().UTC().Format("20060102T150405")+".ops")
	t.Logf("reduced to %d operations:\n%s", len(f.Ops), f.Report)
	if err := writeProgram(path, f.Program(header)); err != nil {
		t.Logf("could not save the program: %v", err)
		return
	}
	t.Logf("saved %s; it replays with: %s", path, replay)
}

func writeProgram(path string, p *program.Program) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(p.Format()), 0o644)
}

var unsafe = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

func slug(s string) string { return strings.Trim(unsafe.ReplaceAllString(s, "_"), "_") }

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
