package deploy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	_ "github.com/pgqcheck/pgqcheck/internal/goqueues" // the mutants written in Go, which loading the mutants needs
	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

var programs *Programs

func TestMain(m *testing.M) {
	code := func() int {
		var err error
		if programs, err = NewPrograms(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		defer programs.Close()
		return pgserver.Main(m)
	}()
	os.Exit(code)
}

// lease is what the tests' claims ask for: long beside a claim's few milliseconds, short
// enough that a stall outlasts it within a few seconds' run.
const lease = 400 * time.Millisecond

// window is how long a test's run injects faults: about seven stalls at the default pace.
const window = 3 * time.Second

func server(t *testing.T) *pgserver.Server {
	t.Helper()
	srv, err := pgserver.Shared(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

func target(t *testing.T, q *sut.Queue) Target {
	t.Helper()
	tg, err := SQLTarget(q, lease)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// run runs one deployment and requires that it left no process, proxy or database behind.
func runOne(t *testing.T, cfg Config) *Result {
	t.Helper()
	if cfg.Server == nil {
		cfg.Server = server(t)
	}
	if cfg.Window == 0 && cfg.Target.Window == 0 {
		cfg.Window = window
	}
	cfg.ReportDir, cfg.Programs, cfg.Log = t.TempDir(), programs, tlog{t}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	left(t, cfg.Server)
	var b strings.Builder
	res.Summary(&b)
	t.Logf("%s(%v, the program built in %v)", b.String(), res.Took.Round(time.Millisecond), res.Build.Round(time.Millisecond))
	return res
}

// left fails the test if a run left a worker process or a database of its own behind.
func left(t *testing.T, srv *pgserver.Server) {
	t.Helper()
	live.mu.Lock()
	n := len(live.procs)
	live.mu.Unlock()
	if n > 0 {
		t.Errorf("%d worker processes still run after the run returned", n)
	}
	ctx := context.Background()
	db, err := srv.CreateDatabase(ctx, "pgqcheck_left")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Drop(ctx)
	c, err := pgx.Connect(ctx, db.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var dbs int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname LIKE 'pgqcheck_deploy_%'").Scan(&dbs); err != nil {
		t.Fatal(err)
	}
	if dbs > 0 {
		t.Errorf("%d deployment databases are left on the server", dbs)
	}
}

// TestDeployCatchesUnfencedCompletion is the mode's power: the seed's SQL with a completion
// that does not check the generation, run as real worker processes, is caught under the stall
// fault alone (a worker stopped past its lease resumes and completes the job another worker
// took), with the property the other modes name.
func TestDeployCatchesUnfencedCompletion(t *testing.T) {
	suttest.SelfCheck(t, "./internal/deploy/")
	m := suttest.Mutant(t, "complete-ignores-generation")
	// One run caught it on each of 20 seeds (the first violation 0.65 to 2.9 s into a 3 s
	// window); three give a machine that ran a run's stalls late its chances.
	for seed := uint64(1); seed <= 3; seed++ {
		res := runOne(t, Config{Target: target(t, m.Queue), Faults: []FaultKind{Stall}, Seed: seed})
		if res.OK() {
			continue
		}
		if !staleCaught(res) {
			t.Fatalf("caught, but not as a stale completion: %s", res.FirstText())
		}
		if res.FirstViolation < 0 {
			t.Errorf("caught, without a time of the first violation")
		}
		return
	}
	t.Fatalf("the unfenced completion survived three deployment runs under stalls: %s", m.Bug)
}

// staleCaught reports whether a run caught a stale completion: property 1, or property 4 where
// the windows let the stale completion come before the other claim (then that claim took a done
// job: the same double completion, told from its other end).
func staleCaught(res *Result) bool {
	v := res.Verdict.Violation
	return v != nil && (v.Property == model.PFencing || v.Property == model.PDoneOnce)
}

// TestDeployHoldsOnTheSeed is the mode's honesty: the seed's fenced SQL, run the same way under
// stalls, kills and cuts, holds, and the faults bit.
func TestDeployHoldsOnTheSeed(t *testing.T) {
	res := runOne(t, Config{Target: target(t, sut.MustBuiltin(sut.DefaultQueue)), Faults: []FaultKind{Stall, Kill, Cut}, Seed: 1})
	if !res.OK() {
		t.Fatalf("the seed queue failed a deployment run: %s", res.FirstText())
	}
	counts := res.Schedule.Counts()
	for _, k := range []FaultKind{Stall, Kill, Cut} {
		if counts[k] == 0 {
			t.Errorf("the schedule of seed 1 injected no %s; it should draw each kind asked for", k)
		}
	}
	bit(t, res)
}

// bit fails the test unless the run's faults reached its workers: some execution a kill cut
// short, some completion a stalled worker had refused, or some statement a cut or a kill left
// with an unknown outcome.
func bit(t *testing.T, res *Result) {
	t.Helper()
	var unknown, refused, short int
	for _, o := range res.History.Ops {
		switch {
		case o.Output.Outcome == model.Unknown:
			unknown++
		case o.Input.Kind == model.OpComplete && o.Output.Rows == 0 && o.Output.Outcome == model.Returned:
			refused++
		}
	}
	for _, e := range res.Observed.Execs {
		if e.End == 0 {
			short++
		}
	}
	if unknown+refused+short == 0 {
		t.Errorf("%s, and no execution cut short, no refused completion, no unknown outcome: the faults did not reach the workers", res.Schedule.Summary())
	}
	t.Logf("the faults reached the workers: %d executions cut short, %d completions refused, %d operations of unknown outcome", short, refused, unknown)
}

// TestDeployRestart restarts the server under the workers (on a server of its own, started to be
// crashed): the seed holds, the crash is in the history, and nothing is left.
func TestDeployRestart(t *testing.T) {
	srv, err := pgserver.Start(context.Background(), pgserver.Options{Crash: true, Log: &strings.Builder{}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if why := srv.CrashUnsupported(); why != "" {
		t.Skipf("this server cannot be crashed: %s", why)
	}
	res := runOne(t, Config{Server: srv, Target: target(t, sut.MustBuiltin(sut.DefaultQueue)), Faults: []FaultKind{Restart, Stall}, Seed: 3})
	if !res.OK() {
		t.Fatalf("the seed queue failed a deployment run with restarts: %s", res.FirstText())
	}
	if res.Schedule.Counts()[Restart] == 0 {
		t.Fatalf("seed 3 drew no restart")
	}
	crashes := 0
	for _, f := range res.History.Faults {
		if f.Kind == Restart.HistoryName() && f.Until > f.At {
			crashes++
		}
	}
	if crashes != res.Schedule.Counts()[Restart] {
		t.Errorf("the history shows %d crashes with their restart, the schedule injected %d", crashes, res.Schedule.Counts()[Restart])
	}
}

// TestDeployCancelled ends a run from outside (a Ctrl-C reaches it as its context ending):
// the run says so, and no worker process, proxy or database is left.
func TestDeployCancelled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	srv := server(t)
	_, err := Run(ctx, Config{Server: srv, Target: target(t, sut.MustBuiltin(sut.DefaultQueue)), Faults: []FaultKind{Stall}, Seed: 1, Window: window,
		ReportDir: t.TempDir(), Programs: programs})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a cancelled run returned %v, want its context's end", err)
	}
	left(t, srv)
}

// tlog is a run's log in the test's.
type tlog struct{ t *testing.T }

func (l tlog) Write(b []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// TestDeployPython runs the seed's queue with workers in a second language (Python, psycopg 3)
// under stalls, kills and cuts: the same protocol, the same checks, and it holds; the unfenced
// mutant's completion, run by the same Python workers, is caught.
func TestDeployPython(t *testing.T) {
	python, err := FindPython()
	if err != nil {
		if os.Getenv("CI") == "true" || os.Getenv("PGQCHECK_REQUIRE_PSYCOPG") == "1" {
			t.Fatal(err)
		}
		t.Skipf("%v (PGQCHECK_REQUIRE_PSYCOPG=1 or CI=true makes this a failure)", err)
	}
	tg, err := Python(python)
	if err != nil {
		t.Fatal(err)
	}
	res := runOne(t, Config{Target: tg, Faults: []FaultKind{Stall, Kill, Cut}, Seed: 1})
	if !res.OK() {
		t.Fatalf("the seed queue with Python workers failed: %s", res.FirstText())
	}
	if res.Enqueued == 0 {
		t.Fatalf("the Python workers ran no job")
	}
	bit(t, res)
	m := suttest.Mutant(t, "complete-ignores-generation")
	tg.Queue, tg.Name = m.Dir, "python-"+m.Name
	for seed := uint64(1); seed <= 3; seed++ {
		if res := runOne(t, Config{Target: tg, Faults: []FaultKind{Stall}, Seed: seed}); !res.OK() {
			if !staleCaught(res) {
				t.Fatalf("caught, but not as a stale completion: %s", res.FirstText())
			}
			return
		}
	}
	t.Fatalf("the unfenced completion survived three runs of Python workers under stalls")
}
