package model

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"pgregory.net/rapid"
)

const inf = math.MaxInt64

// forever is the lease of a claim in a history without times: it outlives the run.
var forever = Window{Never, Never}

// op builds a history operation; ret inf means the outcome is unknown.
func op(client int, call, ret int64, in Input, out Output) porcupine.Operation {
	if ret == inf && out.Outcome == Returned {
		out.Outcome = Unknown
	}
	return porcupine.Operation{ClientId: client, Call: call, Return: ret, Input: in, Output: out}
}

func enq(c int, call, ret int64, id int64) porcupine.Operation {
	return op(c, call, ret, Input{Kind: OpEnqueue}, Output{Job: id})
}
func claimed(c int, call, ret int64, id, gen int64) porcupine.Operation {
	return op(c, call, ret, Input{Kind: OpClaim}, Output{Found: true, Job: id, Gen: gen})
}
func claimedNone(c int, call, ret int64, strict bool) porcupine.Operation {
	return op(c, call, ret, Input{Kind: OpClaim, Strict: strict}, Output{})
}
func claimUnknown(c int, call int64) porcupine.Operation {
	return op(c, call, inf, Input{Kind: OpClaim}, Output{Outcome: Unknown})
}
func completed(c int, call, ret int64, id, gen, rows int64) porcupine.Operation {
	return op(c, call, ret, Input{Kind: OpComplete, Job: id, Gen: gen}, Output{Rows: rows})
}
func expired(c int, call, ret int64, id int64) porcupine.Operation {
	return op(c, call, ret, Input{Kind: OpExpire, Job: id}, Output{})
}
func observed(c int, call, ret int64, id int64, st State, gen int64, live bool) porcupine.Operation {
	return op(c, call, ret, Input{Kind: OpObserve, Job: id}, Output{Found: true, State: st, Gen: gen, Live: live})
}

// TestPorcupineHandmade: legal histories pass; each kind of broken promise fails.
func TestLinearPorcupineHandmade(t *testing.T) {
	cases := []struct {
		name  string
		ok    bool
		ops   []porcupine.Operation
		multi bool // more than one job: partitioning matters
	}{
		{"claim then complete", true, []porcupine.Operation{
			enq(0, 1, 2, 1), claimed(1, 3, 4, 1, 1), completed(1, 5, 6, 1, 1, 1), observed(2, 7, 8, 1, Done, 1, false),
		}, false},
		{"overlapping claims, one empty (relaxation)", true, []porcupine.Operation{
			enq(0, 1, 2, 1), claimed(1, 3, 6, 1, 1), claimedNone(2, 3, 6, false),
		}, false},
		{"empty claim while a job is plainly eligible (relaxation)", true, []porcupine.Operation{
			enq(0, 1, 2, 1), claimedNone(2, 3, 4, false),
		}, false},
		{"strict empty claim while a job is eligible", false, []porcupine.Operation{
			enq(0, 1, 2, 1), claimedNone(2, 3, 4, true),
		}, false},
		{"claims out of id order (not checked under concurrency)", true, []porcupine.Operation{
			enq(0, 1, 2, 1), enq(0, 3, 4, 2), claimed(1, 5, 6, 2, 1), claimed(1, 7, 8, 1, 1),
		}, true},
		{"stale generation's completion refused", true, []porcupine.Operation{
			enq(0, 1, 2, 1), claimed(1, 3, 4, 1, 1), expired(3, 5, 6, 1), claimed(2, 7, 8, 1, 2),
			completed(1, 9, 10, 1, 1, 0), completed(2, 11, 12, 1, 2, 1),
		}, false},
		{"stale generation's completion accepted", false, []porcupine.Operation{
			enq(0, 1, 2, 1), claimed(1, 3, 4, 1, 1), expired(3, 5, 6, 1), claimed(2, 7, 8, 1, 2),
			completed(1, 9, 10, 1, 1, 1),
		}, false},
		{"stale completion concurrent with the reclaim may go first", true, []porcupine.Operation{
			enq(0, 1, 2, 1), claimed(1, 3, 4, 1, 1), expired(3, 5, 6, 1), claimed(2, 7, 10, 1, 2),
			completed(1, 8, 9, 1, 1, 0),
		}, false},
		{"claim of a job whose lease is live", false, []porcupine.Operation{
			enq(0, 1, 2, 1), claimed(1, 3, 4, 1, 1), claimed(2, 5, 6, 1, 2),
		}, false},
		{"two accepted completions", false, []porcupine.Operation{
			enq(0, 1, 2, 1), claimed(1, 3, 4, 1, 1), completed(1, 5, 6, 1, 1, 1), completed(2, 7, 8, 1, 1, 1),
		}, false},
		{"generation skips", false, []porcupine.Operation{
			enq(0, 1, 2, 1), claimed(1, 3, 4, 1, 2),
		}, false},
		{"generation repeats", false, []porcupine.Operation{
			enq(0, 1, 2, 1), claimed(1, 3, 4, 1, 1), expired(3, 5, 6, 1), claimed(2, 7, 8, 1, 1),
		}, false},
		{"an unknown claim explains a skipped generation", true, []porcupine.Operation{
			enq(0, 1, 2, 1), claimUnknown(1, 3), expired(3, 5, 6, 1), claimed(2, 7, 8, 1, 2),
		}, false},
		{"an unknown claim cannot take a live lease", false, []porcupine.Operation{
			enq(0, 1, 2, 1), claimUnknown(1, 3), claimed(2, 7, 8, 1, 2),
		}, false},
		{"an unknown claim cannot act before it was called", false, []porcupine.Operation{
			enq(0, 1, 2, 1), expired(3, 3, 4, 1), claimed(2, 5, 6, 1, 2), claimUnknown(1, 7),
		}, false},
		{"an unknown completion may have taken effect", true, []porcupine.Operation{
			enq(0, 1, 2, 1), claimed(1, 3, 4, 1, 1), op(1, 5, inf, Input{Kind: OpComplete, Job: 1, Gen: 1}, Output{}),
			observed(2, 7, 8, 1, Done, 1, false),
		}, false},
		{"an unknown completion may not have taken effect", true, []porcupine.Operation{
			enq(0, 1, 2, 1), claimed(1, 3, 4, 1, 1), op(1, 5, inf, Input{Kind: OpComplete, Job: 1, Gen: 1}, Output{}),
			observed(2, 7, 8, 1, Running, 1, true),
		}, false},
		{"an unknown enqueue explains a claimed id", true, []porcupine.Operation{
			op(0, 1, inf, Input{Kind: OpEnqueue}, Output{}), claimed(1, 3, 4, 7, 1),
		}, false},
		{"a claimed id nobody enqueued", false, []porcupine.Operation{
			claimed(1, 3, 4, 7, 1),
		}, false},
		{"a job lost from a snapshot", false, []porcupine.Operation{
			enq(0, 1, 2, 1), op(2, 3, 4, Input{Kind: OpObserve, Job: 1}, Output{}),
		}, false},
		{"a rolled-back claim leaves its generation to the next", true, []porcupine.Operation{
			enq(0, 1, 2, 1), op(1, 3, 4, Input{Kind: OpClaim}, Output{Outcome: Aborted, Found: true, Job: 1, Gen: 1}),
			claimed(2, 5, 6, 1, 1),
		}, false},
	}
	m := Porcupine()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := porcupine.CheckOperations(m, c.ops)
			if got != c.ok {
				t.Fatalf("linearizable = %v, want %v", got, c.ok)
			}
			if whole := porcupine.CheckOperations(wholeQueue(8), c.ops); whole != c.ok {
				t.Fatalf("the unpartitioned model says %v, want %v", whole, c.ok)
			}
		})
	}
}

// TestStepJobNamesTheProperty: each illegal step names the promise it breaks.
func TestLinearStepJobNamesTheProperty(t *testing.T) {
	running := JobState{Exists: true, State: Running, Gen: 2, Until: forever}
	expiredRunning := JobState{Exists: true, State: Running, Gen: 2, Until: At(-ExpireBy)}
	done := JobState{Exists: true, State: Done, Gen: 2}
	cases := []struct {
		s    JobState
		in   Input
		out  Output
		prop Property
	}{
		{expiredRunning, Input{Kind: OpComplete, Job: 1, Gen: 1}, Output{Rows: 1}, PFencing},
		{expiredRunning, Input{Kind: OpComplete, Job: 1, Gen: 2}, Output{Rows: 1}, PFencing},
		{running, Input{Kind: OpComplete, Job: 1, Gen: 2}, Output{Rows: 0}, PFencing},
		{done, Input{Kind: OpComplete, Job: 1, Gen: 2}, Output{Rows: 1}, PDoneOnce},
		{running, Input{Kind: OpClaim}, Output{Found: true, Job: 1, Gen: 3}, PExclusion},
		{expiredRunning, Input{Kind: OpClaim}, Output{Found: true, Job: 1, Gen: 2}, PGenerations},
		{done, Input{Kind: OpClaim}, Output{Found: true, Job: 1, Gen: 3}, PDoneOnce},
		{JobState{}, Input{Kind: OpClaim}, Output{Found: true, Job: 1, Gen: 1}, PRecovery},
		{expiredRunning, Input{Kind: OpClaim, Strict: true, Job: 1}, Output{}, PRecovery},
		{running, Input{Kind: OpObserve, Job: 1}, Output{Found: true, State: Running, Gen: 1, Live: true}, PGenerations},
	}
	for i, c := range cases {
		_, v := StepJob(c.s, c.in, c.out)
		if v == nil || v.Property != c.prop {
			t.Errorf("case %d: %s in state %s: got %v, want property %d", i, DescribeOp(c.in, c.out), c.s, v, c.prop)
		}
	}
}

// TestPartitionByJobIsSound compares the partitioned check with a model of the whole queue
// (every job in one state, unknown-outcome claims branching over every job) on random small
// histories, legal and not:
//   - without operations that name no job, both decide the same (linearizability is local);
//   - with them, whatever the whole model accepts the partitioned check accepts (copies only
//     over-approximate), so partitioning never raises a false alarm;
//   - leaving copies out (the earliest few unknown claims, strict claims that cannot fail)
//     decides exactly what keeping every copy decides.
func TestLinearPartitionByJobIsSound(t *testing.T) {
	const jobs = 3
	part := Porcupine()
	every := Porcupine()
	every.Partition = func(h []porcupine.Operation) [][]porcupine.Operation { return partitionByJob(h, true, false) }
	whole := wholeQueue(jobs)
	rapid.Check(t, func(t *rapid.T) {
		h, legal := drawHistory(t, jobs)
		p := porcupine.CheckOperations(part, h)
		e := porcupine.CheckOperations(every, h)
		w := porcupine.CheckOperations(whole, h)
		if p != e {
			t.Fatalf("with every copy %v, with the earliest copies %v\n%s", e, p, show(h))
		}
		if legal && !w {
			t.Fatalf("a history recorded from a legal execution is rejected by the whole model\n%s", show(h))
		}
		if w && !p {
			t.Fatalf("false alarm: the whole queue accepts, the partitioned check rejects\n%s", show(h))
		}
		if !namesNoJob(h) && p != w {
			t.Fatalf("partitioned %v, whole %v, with every operation naming its job\n%s", p, w, show(h))
		}
	})
}

func namesNoJob(h []porcupine.Operation) bool {
	for _, o := range h {
		in, out := o.Input.(Input), o.Output.(Output)
		if _, ok := JobOf(in, out); !ok && !Ignored(in, out) {
			return true
		}
	}
	return false
}

func show(h []porcupine.Operation) string {
	var b strings.Builder
	for _, o := range h {
		ret := fmt.Sprint(o.Return)
		if o.Return == inf {
			ret = "inf"
		}
		fmt.Fprintf(&b, "  [%d, %s] %s\n", o.Call, ret, DescribeOp(o.Input.(Input), o.Output.(Output)))
	}
	return b.String()
}

// wholeState is every job's state, ids 1..len.
type wholeState [8]JobState

// wholeQueue is the relaxed specification without partitions: one state for the whole queue,
// and an unknown-outcome operation that names no job branches over every job it could touch.
func wholeQueue(jobs int) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []any { return []any{wholeState{}} },
		Step: func(state, input, output any) []any {
			s, in, out := state.(wholeState), input.(Input), output.(Output)
			if Ignored(in, out) {
				return []any{s}
			}
			if id, ok := JobOf(in, out); ok {
				if id < 1 || int(id) > jobs {
					return nil
				}
				next, v := StepJob(s[id-1], in, out)
				if v != nil {
					return nil
				}
				s[id-1] = next
				return []any{s}
			}
			switch {
			case in.Kind == OpClaim && out.Outcome == Unknown:
				res := []any{s}
				for i := 0; i < jobs; i++ {
					if s[i].eligible(At(0)) != Over {
						n := s
						n[i] = JobState{Exists: true, State: Running, Gen: s[i].Gen + 1, Until: forever}
						res = append(res, n)
					}
				}
				return res
			case in.Kind == OpEnqueue && out.Outcome == Unknown:
				res := []any{s}
				for i := 0; i < jobs; i++ {
					if !s[i].Exists {
						n := s
						n[i] = JobState{Exists: true, State: Ready}
						res = append(res, n)
					}
				}
				return res
			case in.Kind == OpClaim && in.Strict:
				for i := 0; i < jobs; i++ {
					if s[i].eligible(At(0)) != Over {
						return nil
					}
				}
				return []any{s}
			}
			return []any{s}
		},
		Equal: func(a, b any) bool { return a.(wholeState) == b.(wholeState) },
	}
	return nm.ToModel()
}

// drawHistory draws a small history. Half the time it is recorded from a legal execution
// (each operation takes effect at an instant inside its interval, outputs from the state then),
// possibly with one answer corrupted; otherwise every answer is drawn at random.
func drawHistory(t *rapid.T, jobs int) ([]porcupine.Operation, bool) {
	n := rapid.IntRange(1, 7).Draw(t, "n")
	if rapid.Bool().Draw(t, "random") {
		var h []porcupine.Operation
		for i := 0; i < n; i++ {
			call := int64(rapid.IntRange(0, 20).Draw(t, "call"))
			ret := call + int64(rapid.IntRange(0, 10).Draw(t, "len"))
			if rapid.IntRange(0, 5).Draw(t, "unknown") == 0 {
				ret = inf
			}
			in, out := drawOp(t, jobs)
			h = append(h, op(i, call, ret, in, out))
		}
		return h, false
	}
	var s wholeState
	var h []porcupine.Operation
	next := int64(1)
	for i := 0; i < n; i++ {
		at := int64(3*i + 2) // the instant it takes effect
		call := at - int64(rapid.IntRange(0, 6).Draw(t, "before"))
		ret := at + int64(rapid.IntRange(0, 6).Draw(t, "after"))
		lost := rapid.IntRange(0, 5).Draw(t, "lost") == 0
		applied := !lost || rapid.Bool().Draw(t, "applied")
		in, out := legalOp(t, &s, jobs, &next, applied)
		if lost {
			ret = inf
			out.Outcome = Unknown
			if in.Kind == OpClaim || in.Kind == OpEnqueue {
				out = Output{Outcome: Unknown}
			}
		}
		h = append(h, op(i, call, ret, in, out))
	}
	legal := true
	if rapid.Bool().Draw(t, "corrupt") {
		i := rapid.IntRange(0, len(h)-1).Draw(t, "which")
		in, out := drawOp(t, jobs)
		h[i].Input, h[i].Output = in, out
		if h[i].Return == inf {
			o := h[i].Output.(Output)
			o.Outcome = Unknown
			h[i].Output = o
		}
		legal = false
	}
	return h, legal
}

func drawOp(t *rapid.T, jobs int) (Input, Output) {
	job := func(label string) int64 { return int64(rapid.IntRange(1, jobs).Draw(t, label)) }
	gen := func() int64 { return int64(rapid.IntRange(0, 3).Draw(t, "gen")) }
	switch rapid.IntRange(0, 4).Draw(t, "kind") {
	case 0:
		return Input{Kind: OpEnqueue}, Output{Job: job("id")}
	case 1:
		if rapid.Bool().Draw(t, "found") {
			return Input{Kind: OpClaim}, Output{Found: true, Job: job("id"), Gen: gen()}
		}
		return Input{Kind: OpClaim, Strict: rapid.Bool().Draw(t, "strict")}, Output{}
	case 2:
		return Input{Kind: OpComplete, Job: job("id"), Gen: gen()}, Output{Rows: int64(rapid.IntRange(0, 1).Draw(t, "rows"))}
	case 3:
		return Input{Kind: OpExpire, Job: job("id")}, Output{}
	}
	st := rapid.SampledFrom([]State{Ready, Running, Done}).Draw(t, "state")
	return Input{Kind: OpObserve, Job: job("id")}, Output{Found: rapid.Bool().Draw(t, "present"), State: st, Gen: gen(), Live: rapid.Bool().Draw(t, "live")}
}

// legalOp draws an operation, applies it to s unless applied is false (an operation whose
// outcome was lost and which did not take effect) and returns the answer a correct queue gives.
func legalOp(t *rapid.T, s *wholeState, jobs int, next *int64, applied bool) (Input, Output) {
	job := int64(rapid.IntRange(1, jobs).Draw(t, "id"))
	j := &s[job-1]
	kind := rapid.IntRange(0, 4).Draw(t, "kind")
	if kind == 0 && *next > int64(jobs) {
		kind = 3 // every job exists: an expiry instead, applied like any other
	}
	switch kind {
	case 0:
		id := *next
		if applied {
			*next++
			s[id-1] = JobState{Exists: true, State: Ready}
		}
		return Input{Kind: OpEnqueue}, Output{Job: id}
	case 1:
		for i := 0; i < jobs; i++ {
			if s[i].eligible(At(0)) != Over {
				out := Output{Found: true, Job: int64(i + 1), Gen: s[i].Gen + 1}
				if applied {
					s[i] = JobState{Exists: true, State: Running, Gen: s[i].Gen + 1, Until: forever}
				}
				return Input{Kind: OpClaim}, out
			}
		}
		return Input{Kind: OpClaim, Strict: true}, Output{}
	case 2:
		g := j.Gen - int64(rapid.IntRange(0, 1).Draw(t, "stale"))
		rows := int64(0)
		if j.completable(g, At(0)) == Live {
			rows = 1
			if applied {
				*j = JobState{Exists: true, State: Done, Gen: j.Gen}
			}
		}
		return Input{Kind: OpComplete, Job: job, Gen: g}, Output{Rows: rows}
	case 3:
		if applied && j.State == Running {
			j.Until = At(-ExpireBy)
		}
		return Input{Kind: OpExpire, Job: job}, Output{}
	}
	return Input{Kind: OpObserve, Job: job}, Output{Found: j.Exists, State: j.State, Gen: j.Gen, Live: j.State == Running && leaseAt(j.Until, At(0)) == Live}
}

// TestLinearTokensUnknownClaim: on a queue of claim tokens (no generation counter), a claim
// whose answer was lost holds a token nobody saw, so the previous owner's token is stale once it
// may have run: the previous owner's refused completion after a snapshot that shows the job
// claimed again is legal, and its accepted one is not.
func TestLinearTokensUnknownClaim(t *testing.T) {
	m := Shape{NoGeneration: true}.Porcupine()
	lost := func(rows int64) []porcupine.Operation {
		return []porcupine.Operation{
			enq(0, 1, 2, 1), claimed(1, 3, 4, 1, 1), expired(3, 5, 6, 1), claimUnknown(2, 7),
			observed(4, 8, 9, 1, Running, 1, true), completed(1, 10, 11, 1, 1, rows),
		}
	}
	if !porcupine.CheckOperations(m, lost(0)) {
		t.Error("a stale token's refused completion, after a lost claim took the job, is called not linearizable")
	}
	if porcupine.CheckOperations(m, lost(1)) {
		t.Error("a stale token's accepted completion, after a lost claim took the job, is called linearizable")
	}
}

// Where a lease is its worker's, unknown claims of different workers are not interchangeable:
// the copy a heartbeat needs must not be left out for an earlier-called one of another worker.
// (A stress run's history, cut down: worker w0's claim, called before the enqueue, lost its
// answer; so did w0-6's, which took the job, and w0-6's heartbeats then extended it.)
func TestLinearPartitionKeepsEachWorkersClaim(t *testing.T) {
	sh := Shape{Can: Can{Fail: true, Heartbeat: true}, Life: Lifecycle{WorkerLease: true}}
	claimBy := func(c int, call int64, worker string) porcupine.Operation {
		return op(c, call, inf, Input{Kind: OpClaim, Worker: worker, Lease: time.Hour}, Output{Outcome: Unknown})
	}
	beat := func(c int, call, ret int64) porcupine.Operation {
		return op(c, call, ret, Input{Kind: OpRenew, Worker: "w0-6", Lease: time.Hour}, Output{Found: true, Job: 1})
	}
	h := []porcupine.Operation{claimBy(0, 1, "w0"), enq(1, 2, 3, 1), claimBy(2, 4, "w0-6"), beat(3, 5, 6), beat(3, 7, 8)}
	if !porcupine.CheckOperations(sh.Porcupine(), h) {
		t.Fatal("w0-6's heartbeats after its own lost claim are rejected")
	}
	// Without w0-6's claim, nothing could have given it the lease.
	if porcupine.CheckOperations(sh.Porcupine(), slices.Delete(slices.Clone(h), 2, 3)) {
		t.Fatal("a heartbeat of a worker that never claimed is accepted")
	}
}

// TestPhantomsStepFromEveryState: an operation whose answer was lost and that names no job
// (a lost claim, enqueue, rescue or heartbeat, copied into every job's history) steps from
// every state without a violation. The checker relies on it: such copies can always come last,
// so a job's history legal without them is legal with them (linear/check's decide).
func TestPhantomsStepFromEveryState(t *testing.T) {
	shapes := []Shape{{}, {NoGeneration: true}, {Unfenced: true}, {DoneDeleted: true},
		{Can: Can{Fail: true}, Life: Lifecycle{MaxAttempts: 2, Backoff: time.Second, AttemptsAtClaim: true, WorkerLease: true}}}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	var states []JobState
	for _, st := range []State{Ready, Running, Done, Dead} {
		for _, until := range []Window{{}, {From: ms(5), To: ms(6)}, {From: ms(500), To: Never}} {
			states = append(states, JobState{Exists: true, State: st, Gen: 2, Until: until, Attempts: 1, Owner: "w1"},
				JobState{Exists: true, State: st, Gen: 1, Until: until, Due: Window{From: ms(300), To: ms(301)}, Attempts: 2})
		}
	}
	states = append(states, JobState{})
	checked := 0
	for kind := range specs {
		for _, worker := range []string{"", "w1"} {
			for _, at := range []Window{{From: ms(10), To: Never}, {From: ms(10), To: ms(11)}} {
				in := Input{Kind: kind, Job: 1, Worker: worker, Lease: ms(250), At: at}
				out := Output{Outcome: Unknown}
				if _, named := JobOf(in, out); named {
					continue
				}
				for _, sh := range shapes {
					for _, s := range states {
						checked++
						if _, v := sh.StepJob(s, in, out); v != nil {
							t.Errorf("%s (worker %q, at %s) from %s on %+v: %s", kind, worker, at, s, sh, v)
						}
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no kind names no job when its answer is lost")
	}
}
