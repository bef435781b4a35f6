package fuzz_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/pgqcheck/pgqcheck/fuzz"
	"github.com/pgqcheck/pgqcheck/internal/linear/schedule"
	"github.com/pgqcheck/pgqcheck/internal/mutant"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/sequential"
	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/internal/testflags"
	"github.com/pgqcheck/pgqcheck/internal/verdict"
	"github.com/pgqcheck/pgqcheck/sut"
)

// FuzzScheduled runs scheduled mode with its choices read from the input, one byte a choice:
// the sessions, the sequential prefix, each session's operations, the interleaving and the
// faults (see schedule.Scheduler.RunBytes). The run's history is checked for linearizability
// after a drain. Its seed corpus (testdata/fuzz/FuzzScheduled) holds, for each mutant the
// Linear suite must catch, the shrunk run that catches it; a correct queue passes them all.
func FuzzScheduled(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		processScheduler(t).RunBytes(t, data)
	})
}

func processScheduler(t *testing.T) *schedule.Scheduler {
	t.Helper()
	proc.Lock()
	defer proc.Unlock()
	if proc.sched == nil {
		// The scheduler outlives any one input. A failing run's report stays in the temporary
		// folder for the reader, one per fuzzing process so that they do not overwrite each other.
		name := fmt.Sprintf("fuzz-%d", os.Getpid())
		proc.sched = schedule.NewScheduler(context.Background(), processInstall(t, "FuzzScheduled"), schedule.Config{Name: name})
	}
	return proc.sched
}

// TestScheduledCorpus proves FuzzScheduled's seed corpus means what it says: every mutant the
// Linear suite must catch has an entry, and replaying it on that mutant breaks a property.
// With -update-corpus (go generate) an entry that is missing or no longer catches its mutant is
// replaced by the shrunk run of a fresh search.
func TestScheduledCorpus(t *testing.T) {
	suttest.SelfCheck(t, "./fuzz")
	ms, err := mutant.Load(filepath.Join("..", "testdata", "mutants"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	n := 0
	for _, m := range ms {
		if !m.Expects("Linear") {
			continue
		}
		n++
		t.Run(m.Name, func(t *testing.T) {
			path := filepath.Join(fuzz.ScheduledCorpusDir, "mutant-"+m.Name)
			in := suttest.Install(t, m.Queue)
			cfg := schedule.Config{Name: m.Name, ReportDir: t.TempDir()}
			// The replays share one scheduler, so each pause to a lease's edge learns from the
			// last how late its statement lands.
			s := schedule.NewScheduler(ctx, in, cfg)
			defer s.Close()
			replay := func() (*verdict.Finding, error) {
				data, err := fuzz.ReadInputFile(path)
				if err != nil {
					return nil, err
				}
				return s.ReplayInput(t.Name(), data)
			}
			// A catch that rests on real time gets m.Replays() replays whose statements landed where
			// their pauses aimed them (one the load carried past the edge tested nothing), and up to
			// twice as many again to make up for those.
			var f *verdict.Finding
			var err error
			tries, aimed := 0, 0
			for tries < 3*m.Replays() && aimed < m.Replays() {
				tries++
				if f, err = replay(); err != nil || f != nil {
					break
				}
				if landedAsAimed(s.Landings()) {
					aimed++
				}
			}
			if f != nil && tries > 1 {
				t.Logf("%s caught %s on replay %d; the replays before it did not (a catch that rests on real time)", path, m.Name, tries)
			}
			if *updateCorpus && (err != nil || f == nil) {
				regenerate(t, in, cfg, path)
				f, err = replay()
			}
			if err != nil {
				t.Fatalf("%v; run go generate ./fuzz", err)
			}
			if f == nil {
				t.Fatalf("%s survived its corpus entry %s (%s) in %d replays, %d of them landing where their pauses aimed; the last one's trace:\n%s\nrun go generate ./fuzz", m.Name, path, m.Bug, tries, aimed, s.Trace())
			}
			t.Logf("%s:\n%s", path, f)
		})
	}
	if n == 0 {
		t.Fatal("no mutant expects Linear: the corpus proves nothing")
	}
}

// regenerate searches scheduled mode on a mutant and writes the failing run, shrunk by rapid
// and then by schedule.ShrinkInput, to path.
func regenerate(t *testing.T, in *sut.Installed, cfg schedule.Config, path string) {
	defer testflags.Defaults(map[string]string{"rapid.nofailfile": "true", "rapid.checks": "500", "rapid.shrinktime": "20s"})()
	f, err := schedule.Search(context.Background(), in, t.Name(), cfg)
	if err != nil || f == nil {
		t.Fatalf("scheduled mode did not catch %s (%v)", in.Queue.Name, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if small := schedule.ShrinkInput(context.Background(), in, t.Name(), cfg, f.FuzzInput); small != nil {
		f = small
	}
	if err := os.WriteFile(path, schedule.CorpusFile(f.FuzzInput), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestScheduledCorpusRealTime: FuzzScheduled's real-time entry still draws what it was written
// for: claims with leases that end by themselves, a pause past one's end, a claim transaction
// that waits, and a plain pause; a correct queue passes it.
func TestScheduledCorpusRealTime(t *testing.T) {
	data, err := fuzz.ReadInputFile(filepath.Join(fuzz.ScheduledCorpusDir, "seed-real-time"))
	if err != nil {
		t.Fatal(err)
	}
	s := schedule.NewScheduler(context.Background(), suttest.Install(t, sut.MustBuiltin(sut.DefaultQueue)), schedule.Config{Name: "real-time", ReportDir: t.TempDir()})
	defer s.Close()
	s.RunBytes(t, data)
	// What the entry draws is read from the program, not from the counts: a pause to a lease's
	// edge sleeps nothing when a loaded machine has already carried the run past that edge.
	timed, pauses := 0, 0
	for _, op := range s.Program().Ops {
		switch o := op.(type) {
		case program.Claim:
			if o.Lease > 0 {
				timed++
			}
		case program.Sleep, program.Near:
			pauses++
		}
	}
	if timed < 2 || pauses < 4 {
		t.Fatalf("the entry draws %d timed claims and %d pauses, not the 2 and 4 it was written for (have the scheduled weights changed?):\n%s", timed, pauses, s.Trace())
	}
	if s.Counts.RealPauses == 0 {
		t.Fatalf("no pause of the entry let real time pass:\n%s", s.Trace())
	}
}

// BenchmarkFuzzScheduledExec measures what one fuzz worker can execute of FuzzScheduled: random
// 64-byte inputs run as scheduled runs on the seed queue, resets, drains and linearizability
// checks included (what -fuzz does per input, without the fuzzer's own bookkeeping).
func BenchmarkFuzzScheduledExec(b *testing.B) {
	in := suttest.Install(b, sut.MustBuiltin(sut.DefaultQueue))
	s := schedule.NewScheduler(context.Background(), in, schedule.Config{Name: "bench", ReportDir: b.TempDir()})
	defer s.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	input := make([]byte, 64)
	for b.Loop() {
		for i := range input {
			input[i] = byte(rng.UintN(256))
		}
		s.RunBytes(b, input)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "execs/s")
}

// TestCorporaHoldOnCorrectQueues: every seed corpus entry of both targets is a run that a
// correct queue passes, on each built-in queue (`go test ./fuzz` replays them on one queue).
func TestCorporaHoldOnCorrectQueues(t *testing.T) {
	ctx := context.Background()
	entries, err := filepath.Glob(filepath.Join(fuzz.ScheduledCorpusDir, "*"))
	if err != nil || len(entries) == 0 {
		t.Fatalf("no FuzzScheduled corpus (%v)", err)
	}
	for _, name := range sut.Builtins() {
		t.Run(name, func(t *testing.T) {
			in := suttest.Install(t, sut.MustBuiltin(name))
			for _, path := range entries {
				data, err := fuzz.ReadInputFile(path)
				if err != nil {
					t.Fatal(err)
				}
				f, err := schedule.ReplayInput(ctx, in, t.Name(), schedule.Config{Name: name, ReportDir: t.TempDir()}, data)
				switch {
				case err != nil:
					t.Errorf("%s on the correct queue %s: %v", path, name, err)
				case f != nil:
					t.Errorf("%s fails on the correct queue %s:\n%s", path, name, f)
				}
			}
			env, err := sequential.NewEnv(ctx, in, fuzz.Workers, fuzz.Lockers)
			if err != nil {
				t.Fatal(err)
			}
			defer env.Close()
			for _, e := range fuzz.Corpus() {
				if err := fuzz.Run(ctx, env, e.Steps); err != nil {
					t.Errorf("FuzzQueue entry %s fails on the correct queue %s: %v\n%s", e.Name, name, err, env.Program())
				}
			}
		})
	}
}

// landedAsAimed: every statement after a pause to just before a lease's edge landed where the
// pause aimed it.
func landedAsAimed(ls []program.Landing) bool {
	for _, l := range ls {
		if !l.Aimed() {
			return false
		}
	}
	return true
}
