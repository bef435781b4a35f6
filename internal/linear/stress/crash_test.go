package stress

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

// sabotageEnv makes crashServer's restarts fail on purpose: TestLinearCrashLeavesNothing runs
// TestLinearCrashRestart so, in a process of its own, to see a failing crash test clean up.
const sabotageEnv = "PGQCHECK_CRASH_SABOTAGE"

// errSabotaged is the restart failure sabotageEnv asks for.
var errSabotaged = errors.New("restart refused on purpose (" + sabotageEnv + ")")

// sabotaged crashes its server for real and refuses to restart it, leaving it down.
type sabotaged struct{ *pgserver.Server }

func (s sabotaged) Restart(context.Context) error { return errSabotaged }

// crashServer starts a server of its own in crash mode, on the backend PGQCHECK_PG chooses
// (local or docker): a crash must not take down the server the other tests share. The dsn
// backend cannot be crashed, and the test says so and skips. settings weaken it on purpose.
// The Crasher is the server, or its sabotaged self under sabotageEnv.
func crashServer(t *testing.T, settings ...string) (*pgserver.Server, Crasher) {
	t.Helper()
	o := pgserver.OptionsFromEnv()
	if o.Kind == "dsn" || (o.Kind == "" || o.Kind == "auto") && o.DSN != "" {
		t.Skip("PGQCHECK_PG=dsn: the suite cannot kill -9 and restart a server it does not own; run the crash tests with PGQCHECK_PG=local or docker")
	}
	o.Crash, o.Settings, o.Log = true, settings, io.Discard
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv, err := pgserver.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	pgserver.CleanupOnInterrupt(srv)
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	})
	t.Logf("crash server: %s", srv.Banner())
	t.Logf("crash server dir=%q container=%q", srv.Dir(), srv.ContainerID())
	if os.Getenv(sabotageEnv) != "" {
		return srv, sabotaged{srv}
	}
	return srv, srv
}

// installOn installs q in a database of its own on srv.
func installOn(t *testing.T, srv *pgserver.Server, q *sut.Queue) *sut.Installed {
	t.Helper()
	ctx := context.Background()
	db, err := srv.CreateDatabase(ctx, "pgqcheck_crash_"+q.Name)
	if err != nil {
		t.Fatal(err)
	}
	in, err := sut.Install(ctx, db.DSN, q)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Close)
	return in
}

// TestLinearCrashRestart: stress traffic on each built-in correct queue while the server is
// killed with SIGKILL and restarted; the workers reconnect and go on, the history records the
// crash and the restart, operations cut by the crash have unknown outcomes, and the drained
// history passes every check (a false alarm here is a defect of the suite).
func TestLinearCrashRestart(t *testing.T) {
	t.Parallel()
	srv, crasher := crashServer(t)
	for _, name := range []string{"seed", "subquery", "split"} {
		t.Run(name, func(t *testing.T) {
			in := installOn(t, srv, sut.MustBuiltin(name))
			res, err := Run(context.Background(), in, Config{Duration: 800 * time.Millisecond, Crash: crasher, ReportDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			t.Log(res)
			if res.Failed() {
				t.Fatalf("%s\n%s", res, res.Verdict.Explanation)
			}
			if len(res.Crashes) != 1 {
				t.Fatalf("%d crash rounds, want 1", len(res.Crashes))
			}
			var crash, restart int64
			for _, f := range res.History.Faults {
				switch f.Kind {
				case history.FaultCrash:
					crash = f.At
				case history.FaultRestart:
					restart = f.At
				}
			}
			if crash == 0 || restart <= crash {
				t.Fatalf("faults %v: want a crash, then a restart", res.History.Faults)
			}
			var before, after, unknown int
			for _, o := range res.History.Ops {
				switch {
				case o.Output.Outcome == model.Unknown && o.Call < crash:
					unknown++
				case o.Output.Outcome == model.Returned && o.Return < crash && o.Input.Kind == model.OpComplete && o.Output.Rows == 1:
					before++
				case o.Output.Outcome == model.Returned && o.Call > restart && o.Input.Kind == model.OpComplete && o.Output.Rows == 1:
					after++
				}
			}
			t.Logf("%d completions before the crash, %d after the restart, %d operations cut by the crash (unknown outcome), down %v", before, after, unknown, res.Crashes[0].Down)
			for _, p := range res.Crashes[0].Probes {
				live, over := 0, 0
				var claimed, seen int64 // when the probe's claim was sent; the first snapshot of the job after the crash
				for _, o := range res.History.Ops {
					in, out := o.Input, o.Output
					switch {
					case in.Kind == model.OpClaim && out.Found && out.Job == p.ID && out.Gen == p.Gen:
						claimed = o.Call
					case in.Kind == model.OpObserve && in.Job == p.ID && o.Call > crash && (seen == 0 || o.Call < seen):
						seen = o.Call
					}
					if in.Kind == model.OpObserve && in.Job == p.ID && o.Call > crash && out.State == model.Running && out.Gen == p.Gen {
						if out.Live {
							live++
						} else {
							over++
						}
					}
				}
				touched := false // an expiry or another claim of the job came between the two
				for _, o := range res.History.Ops {
					in, out := o.Input, o.Output
					if o.Call > claimed && o.Call < seen && (in.Kind == model.OpExpire && in.Job == p.ID || in.Kind == model.OpClaim && out.Job == p.ID) {
						touched = true
					}
				}
				t.Logf("the probe's job %d (%v lease) seen after the crash at its generation: %d times live, %d times over (touched by others since: %v)", p.ID, p.Lease, live, over, touched)
				// The long lease outlives the restart: unless the chaos goroutine expired the
				// job (the probe may have claimed one a worker's lease had left), the snapshot
				// of every job right after the restart sees it live, which is what the crash
				// checks' lease rule judges.
				if p.Lease == CrashProbeLeases[len(CrashProbeLeases)-1] && live == 0 && !touched {
					t.Errorf("the probe's %v lease was never seen live after the restart: the crash checks' lease rule had nothing to judge", p.Lease)
				}
			}
			if len(res.Crashes[0].Probes) == 0 {
				t.Errorf("the probe claimed nothing before the crash")
			}
			if before == 0 || after == 0 {
				t.Errorf("%d completions before the crash and %d after the restart: the traffic did not run on both sides of it", before, after)
			}
		})
	}
}

// TestLinearCrashCatchesLostCommits: on a server whose commits are acknowledged before they
// reach the log (synchronous_commit off, the WAL writer asleep), a crash loses acknowledged
// completions, and the crash round must say so.
func TestLinearCrashCatchesLostCommits(t *testing.T) {
	t.Parallel()
	srv, crasher := crashServer(t, "fsync=off", "synchronous_commit=off", "wal_writer_delay=10000ms")
	in := installOn(t, srv, sut.MustBuiltin("seed"))
	// The schema is made durable first: with commits that wait for nothing, a crash soon after
	// the install could lose the table itself, and the round would end in a harness error
	// rather than in the verdict on the jobs.
	if _, err := in.Admin().Exec(context.Background(), "CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	// Whether a crash loses an acknowledged commit depends on where the WAL writer stood when
	// the postmaster died: it writes a page of WAL once the page is full, and a round whose
	// last acknowledged commits all sit in written pages loses nothing, which a loaded machine
	// makes more likely. A round that lost nothing proves nothing either way; the test runs
	// another, up to three, and reports each that held.
	const rounds = 3
	var res *Result
	for round := 1; ; round++ {
		var err error
		res, err = Run(context.Background(), in, Config{Duration: 800 * time.Millisecond, Crash: crasher, ReportDir: t.TempDir(), CheckTimeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Log(res)
		if res.Failed() {
			break
		}
		t.Logf("round %d of %d: the crash lost no acknowledged commit", round, rounds)
		if round == rounds {
			t.Fatalf("a crash with asynchronous commits passed %d rounds of %d: %s", rounds, rounds, res)
		}
	}
	// The crash checks themselves must see it, not only the drain's accounting.
	var seen []string
	for _, p := range res.Verdict.Problems {
		if strings.Contains(p, "before the crash") {
			seen = append(seen, p)
		}
	}
	if len(seen) == 0 {
		t.Fatalf("no crash check saw the lost commits; the verdict: %s\n%s", strings.Join(res.Verdict.Problems, "; "), res.Verdict.Explanation)
	}
	t.Logf("%d crash-check problems, the first: %s", len(seen), seen[0])
}

// TestLinearCrashLeavesNothing runs TestLinearCrashRestart in a process of its own with its
// restarts refused on purpose, so that it fails with the server down, and then looks for what
// that process left: its cluster directory, a process running in it, its container, any
// /tmp/pgqcheck-* directory it owned.
func TestLinearCrashLeavesNothing(t *testing.T) {
	t.Parallel()
	if o := pgserver.OptionsFromEnv(); o.Kind == "dsn" || (o.Kind == "" || o.Kind == "auto") && o.DSN != "" {
		t.Skip("PGQCHECK_PG=dsn: the suite cannot kill -9 and restart a server it does not own; run the crash tests with PGQCHECK_PG=local or docker")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestLinearCrashRestart$/^seed$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), sabotageEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("TestLinearCrashRestart passed with its restarts refused:\n%s", out)
	}
	if !strings.Contains(string(out), errSabotaged.Error()) {
		t.Fatalf("TestLinearCrashRestart failed, but not on the refused restart (%v):\n%s", err, out)
	}
	m := regexp.MustCompile(`crash server dir="([^"]*)" container="([^"]*)"`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("the child did not say where its server was:\n%s", out)
	}
	dir, id := string(m[1]), string(m[2])
	if dir == "" && id == "" {
		t.Fatalf("the child's server had neither a directory nor a container:\n%s", out)
	}
	if dir != "" {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("the failed crash test left its cluster directory %s (%v)", dir, err)
		}
		if pids := pgserver.ProcessesUsing(dir); len(pids) > 0 {
			t.Errorf("the failed crash test left processes %v running in %s", pids, dir)
		}
	}
	if id != "" {
		exists, err := pgserver.ContainerExists(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if exists {
			t.Errorf("the failed crash test left container %.12s", id)
		}
	}
	owned, _ := filepath.Glob("/tmp/pgqcheck-*/owner.pid")
	for _, f := range owned {
		if b, err := os.ReadFile(f); err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(cmd.Process.Pid) {
			t.Errorf("the failed crash test left %s", filepath.Dir(f))
		}
	}
	if !t.Failed() {
		t.Logf("the sabotaged crash test failed as it should (%v) and left nothing (dir %q, container %q)", err, dir, id)
	}
}
