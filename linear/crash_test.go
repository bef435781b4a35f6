package linear

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

	"pgqcheck/model"
	"pgqcheck/sut"
	"pgqcheck/sut/pgserver"
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
			res, err := Stress(context.Background(), in, StressConfig{Duration: 800 * time.Millisecond, Crash: crasher, ReportDir: t.TempDir()})
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
				case FaultCrash:
					crash = f.At
				case FaultRestart:
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

// TestLinearCrashChecksHandmade: each crash check fails on a history that breaks it, names the
// crash and the property, and passes the same history with the promise kept.
func TestLinearCrashChecksHandmade(t *testing.T) {
	ms := func(d int) time.Duration { return time.Duration(d) * time.Millisecond }
	at := func(from, to int) model.Window { return model.Window{From: ms(from), To: ms(to)} }
	base := func() *hist {
		return new(hist).enq(1, 2, 1).claim("w1", 3, 4, 1, 1).complete("w1", 5, 6, 1, 1, 1).
			enq(7, 8, 2).claim("w2", 9, 10, 2, 1)
	}
	timed := func(h *hist, lease time.Duration) *hist {
		h.add("probe", 11, 12, model.Input{Kind: model.OpClaim, Lease: lease, At: at(100, 101)}, model.Output{Found: true, Job: 3, Gen: 1})
		return h
	}
	crashed := func(h *hist) *History {
		hh := h.history(false)
		hh.Faults = []Fault{{At: 20, Kind: FaultCrash, Target: "server"}, {At: 30, Kind: FaultRestart, Target: "server"}}
		return hh
	}
	see := func(h *hist, call, ret, id int64, st model.State, gen int64, live bool, w model.Window) *hist {
		h.add("probe", call, ret, model.Input{Kind: model.OpObserve, Job: id, At: w}, model.Output{Found: true, State: st, Gen: gen, Live: live})
		return h
	}
	withEnq3 := func() *hist { return base().enq(10, 11, 3) }
	cases := []struct {
		name string
		h    *History
		prop model.Property // 0: no crash check fails
		want string
	}{
		{"kept", crashed(see(see(base(), 31, 32, 1, model.Done, 1, false, at(500, 501)), 31, 32, 2, model.Running, 1, true, at(500, 501))), 0, ""},
		{"acknowledged completion lost", crashed(see(base(), 31, 32, 1, model.Running, 1, true, at(500, 501))), model.PDoneOnce, "an acknowledged completion was lost"},
		{"done job claimed again", crashed(base().claim("w3", 31, 32, 1, 2)), model.PDoneOnce, "a claim after the restart returned it"},
		{"done job completed again", crashed(base().complete("w1", 31, 32, 1, 1, 1)), model.PDoneOnce, "accepted again"},
		{"generation went back", crashed(see(base(), 31, 32, 2, model.Ready, 0, false, at(500, 501))), model.PGenerations, "a generation went back"},
		{"generation reused", crashed(base().claim("w3", 31, 32, 2, 1)), model.PGenerations, "a generation was reused"},
		{"enqueued job missing", crashed(base().enq(11, 12, 3).add("probe", 31, 32, model.Input{Kind: model.OpObserve, Job: 3}, model.Output{})), model.PRecovery, "missing after the restart"},
		{"job missing", crashed(base().add("probe", 31, 32, model.Input{Kind: model.OpObserve, Job: 2}, model.Output{})), model.PRecovery, "missing after the restart"},
		{"lease live while it runs", crashed(see(timed(withEnq3(), time.Second), 31, 32, 3, model.Running, 1, true, at(900, 901))), 0, ""},
		{"lease over after its end", crashed(see(timed(withEnq3(), time.Second), 31, 32, 3, model.Running, 1, false, at(1200, 1201))), 0, ""},
		{"lease cut short by the restart", crashed(see(timed(withEnq3(), time.Second), 31, 32, 3, model.Running, 1, false, at(900, 901))), model.PDBTime, "saw it not live"},
		{"lease outlives its end", crashed(see(timed(withEnq3(), time.Second), 31, 32, 3, model.Running, 1, true, at(1200, 1201))), model.PDBTime, "saw it live"},
		{"lease expired by the harness", crashed(see(timed(withEnq3(), time.Second).expire(13, 14, 3), 31, 32, 3, model.Running, 1, false, at(900, 901))), 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vs := crashChecks(c.h)
			if c.prop == 0 {
				if len(vs) > 0 {
					t.Fatalf("crash checks fail a history that keeps every promise: %v", vs)
				}
				return
			}
			if len(vs) == 0 {
				t.Fatalf("no crash check fails; want property %d (%s)", c.prop, c.want)
			}
			if vs[0].Property != c.prop || !strings.Contains(vs[0].Error(), c.want) {
				t.Fatalf("got %v; want property %d, %q", vs[0], c.prop, c.want)
			}
			v := Check(c.h, 10*time.Second)
			if v.OK {
				t.Fatalf("Check passes a history a crash check fails: %s", v)
			}
			// Without the crash, the same operations are judged by the other checks only.
			c.h.Faults = nil
			if vs := crashChecks(c.h); len(vs) > 0 {
				t.Fatalf("crash checks fail a history without a crash: %v", vs)
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
	res, err := Stress(context.Background(), in, StressConfig{Duration: 800 * time.Millisecond, Crash: crasher, ReportDir: t.TempDir(), CheckTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res)
	if !res.Failed() {
		t.Fatalf("a crash with asynchronous commits passed: %s", res)
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
