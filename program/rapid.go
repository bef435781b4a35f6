package program

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

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
// the real-time kinds (timed-claim, near-end, real-pause) only to the real-time property,
// where a claim transaction also waits before its claim and before its completion.
var SequentialWeights = Weights{"enqueue": 3, "claim": 4, "complete": 4, "pause": 2, "overslept": 1, "replaced": 1,
	"expire": 1, "crash": 1, "drain": 1, "lock": 2, "release": 2, "claim-txn": 1,
	"timed-claim": 2, "near-end": 2, "real-pause": 1, "rescue": 2}

// The real-time scales: lease lengths of their own (beside the long lease of a plain claim),
// margins around a lease's end, pauses, and a claim transaction's waits. All short, so that a
// run stays fast; the windows the model judges by come from measured clock readings, so short
// spans cost power on a slow machine, never a false alarm.
var (
	TimedLeases = []time.Duration{100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, time.Second}
	NearMargins = []time.Duration{10 * time.Millisecond, 40 * time.Millisecond, 120 * time.Millisecond}
	RealPauses  = []time.Duration{20 * time.Millisecond, 60 * time.Millisecond, 150 * time.Millisecond}
	TxnWaits    = []time.Duration{0, 50 * time.Millisecond, 200 * time.Millisecond}
	TxnHolds    = []time.Duration{0, 150 * time.Millisecond, 300 * time.Millisecond}
)

// StateMachine returns rapid state-machine actions that draw operations against e and run them.
// realTime adds leases that end by themselves and real pauses: claims with leases of drawn
// length, pauses to just before or just after a lease's end followed by another worker's
// claim or the holder's completion, plain pauses, and claim transactions that wait. The ""
// action is the invariant: the queue's snapshot equals the model after every step.
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
	kinds["claim-txn"] = func(t *rapid.T) {
		o := ClaimTxn{S: worker(t), Complete: rapid.IntRange(0, 3).Draw(t, "complete") > 0, Commit: rapid.IntRange(0, 3).Draw(t, "commit") > 0}
		if realTime {
			o.Wait = rapid.SampledFrom(TxnWaits).Draw(t, "wait")
			o.Lease = rapid.SampledFrom(TimedLeases).Draw(t, "lease")
			o.Hold = rapid.SampledFrom(TxnHolds).Draw(t, "hold")
		}
		step(t, o)
	}
	if realTime {
		kinds["timed-claim"] = func(t *rapid.T) {
			step(t, Claim{S: worker(t), Lease: rapid.SampledFrom(TimedLeases).Draw(t, "lease")})
		}
		kinds["near-end"] = func(t *rapid.T) {
			i := holderIndex(t)
			w := WorkerName(i)
			step(t, Near{W: w, Margin: rapid.SampledFrom(NearMargins).Draw(t, "margin"), After: rapid.Bool().Draw(t, "after")})
			// What lands at the lease's edge: another worker's claim, or the holder's completion
			// (the snapshot after every step looks too).
			// It runs only where it applies: the pause has already changed the state, so the
			// action can no longer be skipped.
			by := (i + 1 + rapid.IntRange(0, Workers-2).Draw(t, "by")) % Workers
			thens := []Op{nil, Claim{S: WorkerName(by)}, Complete{S: w}}
			if e.W.CanRescue { // or the rescuer, which must leave a live lease alone
				thens = append(thens, Rescue{S: WorkerName(by)})
			}
			then := thens[rapid.IntRange(0, len(thens)-1).Draw(t, "then")]
			if then != nil && then.Applicable(e.W) {
				if err := e.Step(ctx, then); err != nil {
					Fail(t, e, err)
				}
			}
		}
		kinds["real-pause"] = func(t *rapid.T) { step(t, Sleep{D: rapid.SampledFrom(RealPauses).Draw(t, "d")}) }
	}
	if e.W.CanRescue {
		kinds["rescue"] = func(t *rapid.T) { step(t, Rescue{S: worker(t)}) }
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
