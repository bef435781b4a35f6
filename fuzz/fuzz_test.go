package fuzz_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pgqcheck/pgqcheck/fuzz"
	_ "github.com/pgqcheck/pgqcheck/internal/goqueues" // the Go queues and their mutants
	"github.com/pgqcheck/pgqcheck/internal/linear/schedule"
	"github.com/pgqcheck/pgqcheck/internal/mutant"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/sequential"
	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/internal/testflags"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

// Closing the shared server drops every database this process created, the fuzz targets' too.
func TestMain(m *testing.M) {
	flag.Parse()
	// The fuzzer minimizes every input that reaches new code, for up to 60 s each, and reports
	// no progress meanwhile. An input here costs milliseconds of real statements, and early on
	// most inputs reach new code, so the default makes fuzzing look stalled; 50 runs per
	// minimization keeps it moving (-fuzzminimizetime on the command line wins).
	testflags.Defaults(map[string]string{"test.fuzzminimizetime": "50x"})
	os.Exit(pgserver.Main(m))
}

// FuzzQueue runs a program decoded from the input on the model and the queue, step by step.
// Its seed corpus (testdata/fuzz/FuzzQueue) holds the seed's walkthrough and the shortest
// program catching each mutant; plain `go test` replays it, and every failure the fuzzer finds.
func FuzzQueue(f *testing.F) {
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, data []byte) {
		e := processEnv(t)
		err := fuzz.Run(ctx, e, fuzz.Decode(data))
		if err == nil {
			return
		}
		var h *program.HarnessError
		if errors.As(err, &h) {
			// The sessions may be broken; the next input gets a fresh set.
			discardEnv()
			t.Fatalf("harness failure, not a verdict on the queue: %v\n%s", err, e.Program())
		}
		t.Fatalf("%s", sequential.Report(e, err))
	})
}

// The queue's installations in this process, one per target. Fuzzing runs one input at a time
// per process and `go test -fuzz` runs several processes, so each gets databases of its own,
// installed on first use and reset for every input.
var proc struct {
	sync.Mutex
	installs map[string]*sut.Installed
	env      *sequential.Env
	sched    *schedule.Scheduler
}

// processInstall installs the queue under test (PGQCHECK_SQL_DIR's, else the seed) in a
// database of its own for target. The caller holds proc's lock.
func processInstall(t *testing.T, target string) *sut.Installed {
	t.Helper()
	if in := proc.installs[target]; in != nil {
		return in
	}
	q, err := sut.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if q == nil {
		q = sut.MustBuiltin(sut.DefaultQueue)
	}
	if proc.installs == nil {
		proc.installs = map[string]*sut.Installed{}
	}
	proc.installs[target] = suttest.InstallForProcess(t, "pgqcheck_fuzz_", q)
	return proc.installs[target]
}

func processEnv(t *testing.T) *sequential.Env {
	t.Helper()
	proc.Lock()
	defer proc.Unlock()
	if proc.env != nil {
		return proc.env
	}
	env, err := sequential.NewEnv(context.Background(), processInstall(t, "FuzzQueue"), fuzz.Workers, fuzz.Lockers)
	if err != nil {
		t.Fatal(err)
	}
	proc.env = env
	return env
}

// discardEnv closes FuzzQueue's sessions after a harness failure; its database stays.
func discardEnv() {
	proc.Lock()
	defer proc.Unlock()
	if proc.env != nil {
		proc.env.Close()
		proc.env = nil
	}
}

var updateCorpus = flag.Bool("update-corpus", false, "rewrite testdata/fuzz/FuzzQueue from fuzz.Corpus()")

// TestCorpusFiles keeps the seed corpus files equal to fuzz.Corpus(); -update-corpus (go generate)
// writes them.
func TestCorpusFiles(t *testing.T) {
	for _, e := range fuzz.Corpus() {
		path := filepath.Join(fuzz.CorpusDir, e.Name)
		want := fuzz.FileContent(e.Steps)
		if *updateCorpus {
			if err := os.MkdirAll(fuzz.CorpusDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is missing or stale (%v); run go generate ./fuzz", path, err)
		}
	}
}

// TestCorpusCatchesMutants proves the seed corpus means what it says: each mutant's program
// catches that mutant with the property named, and every mutant the Prop suite must catch has
// such a program.
func TestCorpusCatchesMutants(t *testing.T) {
	suttest.SelfCheck(t, "./fuzz")
	ms, err := mutant.Load(filepath.Join("..", "testdata", "mutants"))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mutant.Mutant{}
	for _, m := range ms {
		byName[m.Name] = m
	}
	covered := map[string]bool{}
	for _, e := range fuzz.Corpus() {
		if e.Mutant == "" {
			continue
		}
		covered[e.Mutant] = true
		m := byName[e.Mutant]
		if m == nil {
			t.Errorf("%s: no mutant %s under testdata/mutants", e.Name, e.Mutant)
			continue
		}
		t.Run(e.Mutant, func(t *testing.T) {
			in := suttest.Install(t, m.Queue)
			env, err := sequential.NewEnv(context.Background(), in, fuzz.Workers, fuzz.Lockers)
			if err != nil {
				t.Fatal(err)
			}
			defer env.Close()
			var v *model.Violation
			if !m.Retry(func() bool {
				err = fuzz.Run(context.Background(), env, e.Steps) // from a fresh queue each time
				return errors.As(err, &v)
			}) {
				t.Fatalf("%s (%s) survived %s: %v\n%s", m.Name, m.Bug, e.Name, err, env.Program())
			}
			if !e.Breaks(v.Property) {
				t.Errorf("%s broke property %d, the corpus says %d: %v\n%s", m.Name, v.Property, e.Property, v, env.Program())
			}
		})
	}
	for _, m := range ms {
		if m.Expects("Prop") && !covered[m.Name] {
			t.Errorf("mutant %s has no program in fuzz.Corpus(); add the shortest one that catches it", m.Name)
		}
	}
}

// TestDecode pins the encoding the corpus files depend on.
func TestDecode(t *testing.T) {
	steps := []fuzz.Step{fuzz.Enqueue(3), fuzz.Complete(2, 1), fuzz.Lock(1, 4), fuzz.Release(1, fuzz.EndTerminate),
		fuzz.TimedClaim(1, 2), fuzz.Near(2, 1, true), fuzz.Near(0, 2, false), fuzz.Sleep(2), fuzz.ClaimTxn(0, 1, 2, 0, fuzz.TxnCompleteRollback),
		fuzz.ClaimTxn(2, 2, 1, 3, fuzz.TxnCommit)}
	got := fuzz.Decode(append(fuzz.Encode(steps), 0xff))
	if len(got) != len(steps) {
		t.Fatalf("decoded %d steps, want %d", len(got), len(steps))
	}
	for i := range steps {
		if got[i] != steps[i] {
			t.Errorf("step %d: decoded %+v, want %+v", i, got[i], steps[i])
		}
	}
	// They decode into the program package's operations; job references are positions among
	// the jobs enqueued so far.
	w := program.NewWorld(sut.MustBuiltin(sut.DefaultQueue), program.Reader)
	w.Jobs = []int64{10, 20, 30}
	var lines []string
	for _, st := range got {
		ops, ok := st.Ops(w)
		if !ok || len(ops) != 1 {
			t.Fatalf("%+v did not decode into one operation: %v", st, ops)
		}
		lines = append(lines, ops[0].String())
	}
	want := []string{"enqueue 3", "w2 complete newest-1", "locker1 lock job 20", "locker1 terminate",
		"w1 claim lease 500ms", "w2 pause until 40ms after its lease ends", "w0 pause until 120ms before its lease ends", "pause 150ms",
		"w0 begin; pause 50ms; claim lease 100ms; pause 300ms; complete it; rollback",
		"w2 begin; pause 200ms; claim lease 1s; pause 150ms; commit"}
	if !slices.Equal(lines, want) {
		t.Errorf("decoded as\n%q\nwant\n%q", lines, want)
	}
	// The kinds are numbered as the corpus files were written: new ones come after.
	if got := fuzz.Encode([]fuzz.Step{fuzz.Pause(1), fuzz.TimedClaim(0, 0), fuzz.Near(0, 0, false), fuzz.Sleep(0), fuzz.ClaimTxn(0, 0, 0, 0, 0)}); !bytes.Equal(got, []byte{8, 1, 9, 0, 10, 0, 11, 0, 12, 0}) {
		t.Errorf("kind codes moved: %v", got)
	}
	if n := len(fuzz.Decode(make([]byte, 10*fuzz.MaxSteps))); n != fuzz.MaxSteps {
		t.Errorf("a long input decoded to %d steps, want the cap %d", n, fuzz.MaxSteps)
	}
}

// TestSeedWalkthroughProgram checks that the corpus's walkthrough is the seed's: on the seed
// queue its claims answer 2|1, 1|1, 1|2 and its completions 0 and 1 rows.
func TestSeedWalkthroughProgram(t *testing.T) {
	var steps []fuzz.Step
	for _, e := range fuzz.Corpus() {
		if e.Name == "seed-walkthrough" {
			steps = e.Steps
		}
	}
	env, err := sequential.NewEnv(context.Background(), suttest.Install(t, sut.MustBuiltin(sut.DefaultQueue)), fuzz.Workers, fuzz.Lockers)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if err := fuzz.Run(context.Background(), env, steps); err != nil {
		t.Fatalf("%v\n%s", err, env.Program())
	}
	want := []string{"ids 1 2", "", "job 2 gen 1", "", "job 1 gen 1", "", "job 1 gen 2", "job 1 gen 1: 0 rows", "job 1 gen 2: 1 row"}
	if len(env.Trace) != len(want) {
		t.Fatalf("ran %d steps, want %d:\n%s", len(env.Trace), len(want), env.Program())
	}
	for i, w := range want {
		_, got, _ := strings.Cut(env.Trace[i], " -> ")
		if got != w {
			t.Errorf("step %d answered %q, the seed's walkthrough %q:\n%s", i+1, got, w, env.Program())
		}
	}
}

// BenchmarkFuzzExec measures what one fuzz worker can execute: random 64-byte inputs decoded
// into programs and run on the model and the queue, resets included (what -fuzz does per input,
// without the fuzzer's own bookkeeping).
func BenchmarkFuzzExec(b *testing.B) {
	ctx := context.Background()
	e := newBenchEnv(b)
	rng := rand.New(rand.NewPCG(1, 2))
	input := make([]byte, 64)
	ops := 0
	for b.Loop() {
		for i := range input {
			input[i] = byte(rng.UintN(256))
		}
		steps := fuzz.Decode(input)
		ops += len(steps)
		if err := fuzz.Run(ctx, e, steps); err != nil {
			b.Fatalf("%s", sequential.Report(e, err))
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "execs/s")
	b.ReportMetric(float64(ops)/float64(b.N), "steps/exec")
}

func newBenchEnv(b *testing.B) *sequential.Env {
	in := suttest.Install(b, sut.MustBuiltin(sut.DefaultQueue))
	e, err := sequential.NewEnv(context.Background(), in, program.Workers, program.Lockers)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(e.Close)
	return e
}
