package program

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"pgregory.net/rapid"

	"pgqcheck/model"
)

// Weights is how often a generator draws each kind of operation: generation is configuration,
// and nothing about weights lives in the operations.
type Weights map[string]int

// Total is the sum of the weights.
func (w Weights) Total() int {
	n := 0
	for _, v := range w {
		n += v
	}
	return n
}

// At is the kind that x, in [0, Total()), falls on, the kinds laid out in name order, so the
// same draw always picks the same kind.
func (w Weights) At(x int) string {
	keys := make([]string, 0, len(w))
	for k := range w {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if x < w[k] {
			return k
		}
		x -= w[k]
	}
	return ""
}

// SequentialWeights is the Prop state machine's mix. The seed's hard case (claim, pause past
// the lease, reclaim, stale completion) needs claims, pauses and completions to dominate; a
// drain ends most interesting states. Lock and release apply only to queues with lock.sql;
// short leases only to the real-time property.
var SequentialWeights = Weights{"enqueue": 3, "claim": 4, "complete": 4, "pause": 2, "overslept": 1, "replaced": 1,
	"expire": 1, "crash": 1, "drain": 1, "lock": 2, "release": 2, "short-lease": 2}

// StateMachine returns rapid state-machine actions that draw operations against e and run them.
// realTime adds claims with a short real lease. The "" action is the invariant: the queue's
// snapshot equals the model after every step.
func StateMachine(ctx context.Context, e *Env, realTime bool) map[string]func(*rapid.T) {
	step := func(t *rapid.T, op Op) {
		if !op.Applicable(e.W) {
			t.Skip("not applicable: " + op.String())
		}
		if err := e.Step(ctx, op); err != nil {
			Fail(t, e, err)
		}
	}
	worker := func(t *rapid.T) string { return WorkerName(rapid.IntRange(0, Workers-1).Draw(t, "worker")) }
	// holderIndex draws among workers that hold a token, so completions and pauses rarely miss.
	holderIndex := func(t *rapid.T) int {
		var ws []int
		for i := 0; i < Workers; i++ {
			if s := e.W.Session(WorkerName(i)); s != nil && len(s.Tokens) > 0 {
				ws = append(ws, i)
			}
		}
		if len(ws) == 0 {
			t.Skip("no worker holds a token")
		}
		return rapid.SampledFrom(ws).Draw(t, "worker")
	}
	holder := func(t *rapid.T) string { return WorkerName(holderIndex(t)) }
	job := func(t *rapid.T) int64 {
		if len(e.W.Jobs) == 0 {
			t.Skip("no jobs yet")
		}
		return rapid.SampledFrom(e.W.Jobs).Draw(t, "job")
	}
	locker := func(t *rapid.T) string { return LockerName(rapid.IntRange(0, Lockers-1).Draw(t, "locker")) }
	kinds := map[string]func(*rapid.T){
		"enqueue": func(t *rapid.T) { step(t, Enqueue{N: rapid.IntRange(1, 3).Draw(t, "n")}) },
		"claim":   func(t *rapid.T) { step(t, Claim{S: worker(t)}) },
		"complete": func(t *rapid.T) {
			// Mostly the newest token; older ones are the stale tokens of paused workers.
			back := rapid.SampledFrom([]int{0, 0, 1, 2}).Draw(t, "back")
			step(t, Complete{S: holder(t), Back: back})
		},
		"pause":     func(t *rapid.T) { step(t, Pause{W: holder(t)}) },
		"overslept": func(t *rapid.T) { step(t, Overslept{W: holder(t)}) },
		"replaced": func(t *rapid.T) {
			i := holderIndex(t)
			by := (i + 1 + rapid.IntRange(0, Workers-2).Draw(t, "by")) % Workers
			step(t, Replaced{W: WorkerName(i), By: WorkerName(by)})
		},
		"expire": func(t *rapid.T) { step(t, Expire{Job: job(t)}) },
		"crash":  func(t *rapid.T) { step(t, Crash{W: holder(t)}) },
		"drain":  func(t *rapid.T) { step(t, Drain{S: worker(t)}) },
	}
	if realTime {
		kinds["short-lease"] = func(t *rapid.T) {
			step(t, ShortLease{W: worker(t), Late: rapid.Bool().Draw(t, "late")})
		}
	}
	if e.CanLock() {
		kinds["lock"] = func(t *rapid.T) { step(t, Lock{S: locker(t), Job: job(t)}) }
		kinds["release"] = func(t *rapid.T) {
			l := locker(t)
			ends := []Op{Commit{S: l}, Rollback{S: l}, Cancel{S: l}, Terminate{S: l}}
			// The locker is drawn first, as the release's receiver, then how it ends.
			step(t, ends[rapid.IntRange(0, len(ends)-1).Draw(t, "how")])
		}
	}
	// rapid picks actions uniformly; one action drawing from a weighted list gives the mix.
	var weighted []string
	for _, k := range sortedKeys(kinds) {
		for i := 0; i < SequentialWeights[k]; i++ {
			weighted = append(weighted, k)
		}
	}
	pick := rapid.SampledFrom(weighted)
	return map[string]func(*rapid.T){
		"op": func(t *rapid.T) { kinds[pick.Draw(t, "op")](t) },
		"": func(t *rapid.T) {
			if err := e.Check(ctx); err != nil {
				Fail(t, e, err)
			}
		},
	}
}

// sortedKeys gives a fixed order, so the same draws give the same program on every run.
func sortedKeys(m map[string]func(*rapid.T)) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// BeginRun starts a property run: an empty queue, then a first enqueue of one to three jobs, so
// that the run's steps go to claims, pauses and completions rather than to operations that do
// not apply to an empty queue.
func BeginRun(ctx context.Context, t *rapid.T, e *Env) {
	t.Helper()
	if err := e.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Step(ctx, Enqueue{N: rapid.IntRange(1, 3).Draw(t, "jobs")}); err != nil {
		Fail(t, e, err)
	}
}

// Fail stops the run with the violated property, the program so far and the snapshot.
func Fail(t *rapid.T, e *Env, err error) {
	t.Helper()
	e.Last = err
	p := model.Property(-1)
	var v *model.Violation
	if errors.As(err, &v) {
		p = v.Property
	}
	FailProperty(t, p, Report(e, err))
}

// Failer is where a failing run is reported: a *rapid.T, or a *testing.T under the fuzzer.
type Failer interface {
	Helper()
	Fatalf(format string, args ...any)
}

// FailProperty fails t with msg from a line of its own for each property (p < 0: not a
// property), so that rapid's shrinker, which keeps only candidates failing with the same stack,
// shrinks toward the same broken promise rather than toward any failure.
func FailProperty(t Failer, p model.Property, msg string) {
	t.Helper()
	switch p {
	case model.PClaimOrder:
		t.Fatalf("%s", msg)
	case model.PFencing:
		t.Fatalf("%s", msg)
	case model.PExclusion:
		t.Fatalf("%s", msg)
	case model.PGenerations:
		t.Fatalf("%s", msg)
	case model.PDoneOnce:
		t.Fatalf("%s", msg)
	case model.PSkipLocked:
		t.Fatalf("%s", msg)
	case model.PRecovery:
		t.Fatalf("%s", msg)
	case model.PLinearizable:
		t.Fatalf("%s", msg)
	case model.PDBTime:
		t.Fatalf("%s", msg)
	case model.PNoErrors:
		t.Fatalf("%s", msg)
	default:
		t.Fatalf("%s", msg)
	}
}

// Report is the failure text: the verdict, the numbered program with the queue's answers, and
// what the model expected the queue to hold.
func Report(e *Env, err error) string {
	return fmt.Sprintf("%v\nqueue: %s\nprogram (queue's answers):\n%smodel now: %v\n",
		err, e.In.Queue.Source, e.Program(), e.Model)
}
