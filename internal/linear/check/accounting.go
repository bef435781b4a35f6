package check

import (
	"fmt"
	"sort"

	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/model"
)

// Accounting is the total-queue check of a drained run, in Jepsen's vocabulary: every job
// whose enqueue was acknowledged must be completed exactly once (accepted completions are the
// dequeues), none lost, none duplicated, none unexpected; and no completion may ever have been
// accepted from a stale generation.
type Accounting struct {
	Enqueued   int
	OK         int
	Lost       []int64 // enqueued, and not done after the drain
	Duplicated []int64 // more than one accepted completion
	Unexpected []int64 // claimed, completed or present without an acknowledged enqueue, or done without an accepted completion
	Stale      []int64 // a completion accepted from a generation that was not the current one
	Problems   []*model.Violation
	// NotPromised are the stale completions of a queue that does not promise fencing: measured,
	// reported, and failing nothing.
	NotPromised []*model.Violation
}

func (a *Accounting) String() string {
	return fmt.Sprintf("accounting: %d enqueued, %d ok, %d lost, %d duplicated, %d unexpected, %d stale", a.Enqueued, a.OK, len(a.Lost), len(a.Duplicated), len(a.Unexpected), len(a.Stale))
}

// Account runs the total-queue check on a drained history. The final state of each job is
// its last observation, which the drain's final snapshot provides.
func Account(h *history.History) *Accounting {
	a := &Accounting{}
	t := tallyOps(h)
	a.Enqueued = len(t.enqueued)
	for _, id := range sortedIDs(t.enqueued) {
		if a.judgeJob(h.Shape, t, id) {
			a.OK++
		}
	}
	a.judgeStrays(h.Shape, t)
	return a
}

// genOp is a generation a claim handed out or a completion presented, and when that operation
// was called and returned.
type genOp struct{ gen, call, ret int64 }

// tally is what a history's operations say of each job, as the accounting reads them.
type tally struct {
	enqueued        map[int64]bool       // an enqueue of the job returned
	unknownEnqueues int                  // enqueues whose outcome is unknown
	accepted        map[int64][]genOp    // completions that returned 1, by the generation presented
	maybe           map[int64]int        // completions whose outcome is unknown
	final           map[int64]history.Op // the job's last observation
	claims          map[int64][]genOp    // claims that returned the job
	mentioned       map[int64]bool       // claimed, completed or seen
	// failures that may have ended the job (failed for good, or at an attempt limit), accepted
	// or of unknown outcome: where dead rows are deleted, such a job may vanish
	ending map[int64]int
}

// mayVanish reports whether job id may be missing from the queue: an accepted (or unknown)
// completion, where done rows are deleted, or a failure that may have ended it, where dead
// rows are.
func (t *tally) mayVanish(sh model.Shape, id int64) bool {
	return sh.DoneDeleted && len(t.accepted[id])+t.maybe[id] > 0 || sh.DeadDeleted && t.ending[id] > 0
}

// tallyOps reads the accepted completions (each by the generation it presented), the claims,
// and every job's last observation, as each operation's facts say.
func tallyOps(h *history.History) *tally {
	t := &tally{enqueued: map[int64]bool{}, accepted: map[int64][]genOp{}, maybe: map[int64]int{},
		final: map[int64]history.Op{}, claims: map[int64][]genOp{}, mentioned: map[int64]bool{}, ending: map[int64]int{}}
	for _, o := range h.Ops {
		f, returned, unknown := model.FactsOf(o.Input, o.Output), o.Output.Outcome == model.Returned, o.Output.Outcome == model.Unknown
		switch {
		case f.Creates && returned:
			t.enqueued[f.Job] = true
		case f.Creates && unknown:
			t.unknownEnqueues++
		case f.Took && returned:
			t.claims[f.Job] = append(t.claims[f.Job], genOp{f.Gen, o.Call, o.Return})
			t.mentioned[f.Job] = true
		case f.Ends && f.Accepted && returned:
			t.accepted[f.Job] = append(t.accepted[f.Job], genOp{f.Gen, o.Call, o.Return})
			t.mentioned[f.Job] = true
		case f.Ends && unknown:
			t.maybe[f.Job]++
		case f.Fails && (unknown || f.Accepted) && (f.Final || h.Shape.Life.MaxAttempts > 0):
			t.ending[f.Job]++
		case f.Observes && returned:
			if p, ok := t.final[f.Job]; !ok || o.Call >= p.Call {
				t.final[f.Job] = o
			}
			if o.Output.Found {
				t.mentioned[f.Job] = true
			}
		}
	}
	return t
}

func sortedIDs(m map[int64]bool) []int64 {
	out := make([]int64, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// judgeJob accounts for one job whose enqueue was acknowledged, and reports whether it is ok.
func (a *Accounting) judgeJob(sh model.Shape, t *tally, id int64) bool {
	f, seen := t.final[id]
	ok := true
	vanished := !seen || !f.Output.Found
	switch {
	case vanished && t.mayVanish(sh, id):
		// done or dead, and deleted as the queue declares
	case vanished:
		a.Lost = append(a.Lost, id)
		a.Problems = append(a.Problems, model.Violate(model.PRecovery, "job %d was enqueued and is missing after the drain (lost)", id))
		ok = false
	case f.Output.State != model.Done && f.Output.State.Terminal():
		// its attempts ran out, or its failure was final: dead is an end of a job's life, as
		// done is
	case f.Output.State != model.Done:
		a.Lost = append(a.Lost, id)
		a.Problems = append(a.Problems, model.Violate(model.PRecovery, "job %d was enqueued and is %s after every lease lapsed and the queue drained (lost)", id, f.Output.State))
		ok = false
	case len(t.accepted[id]) == 0 && t.maybe[id] == 0:
		a.Unexpected = append(a.Unexpected, id)
		a.Problems = append(a.Problems, model.Violate(model.PFencing, "job %d is done, but no completion of it was accepted", id))
		ok = false
	}
	if n := len(t.accepted[id]); n > 1 {
		a.Duplicated = append(a.Duplicated, id)
		a.Problems = append(a.Problems, model.Violate(model.PDoneOnce, "job %d was completed %d times (duplicated)", id, n))
		ok = false
	}
	for _, c := range t.accepted[id] {
		if !staleCompletion(sh, c.gen, c.call, f, seen, t.claims[id]) {
			continue
		}
		v := model.Violate(model.PFencing, "job %d: a completion by generation %d was accepted, but that generation was no longer current (stale)", id, c.gen)
		if sh.Unfenced {
			v.NotPromised = true
			a.NotPromised = append(a.NotPromised, v)
			continue
		}
		a.Stale = append(a.Stale, id)
		a.Problems = append(a.Problems, v)
		return false
	}
	return ok
}

// judgeStrays accounts for the jobs no acknowledged enqueue created.
func (a *Accounting) judgeStrays(sh model.Shape, t *tally) {
	var strays []int64
	for _, id := range sortedIDs(t.mentioned) {
		if !t.enqueued[id] {
			strays = append(strays, id)
		}
	}
	// A job no acknowledged enqueue created, but that the table holds, was created by an
	// enqueue whose answer was lost: it is the queue's as much as any other, and the drain
	// must have completed it too.
	for _, id := range strays {
		f, ok := t.final[id]
		switch {
		case !ok:
		case f.Output.Found && f.Output.State != model.Done && f.Output.State.Terminal():
		case f.Output.Found && f.Output.State != model.Done:
			a.Lost = append(a.Lost, id)
			a.Problems = append(a.Problems, model.Violate(model.PRecovery, "job %d, created by an enqueue whose answer was lost, is %s after every lease lapsed and the queue drained (lost)", id, f.Output.State))
		case !f.Output.Found && !t.mayVanish(sh, id):
			// Seen once, then absent from a later snapshot: only a done (or dead) job may
			// vanish, and only where such rows are deleted.
			a.Lost = append(a.Lost, id)
			a.Problems = append(a.Problems, model.Violate(model.PRecovery, "job %d, created by an enqueue whose answer was lost, was seen and is missing after the drain (lost)", id))
		}
	}
	if len(strays) > t.unknownEnqueues {
		for _, id := range strays {
			a.Unexpected = append(a.Unexpected, id)
			a.Problems = append(a.Problems, model.Violate(model.PRecovery, "job %d was claimed, completed or seen, but no enqueue of it was acknowledged (unexpected)", id))
		}
	}
}

// FirstProblemJob is the job a report shows first: a stale, duplicated, lost or unexpected
// one, in that order; 0 when the accounting found none.
func (a *Accounting) FirstProblemJob() int64 {
	for _, l := range [][]int64{a.Stale, a.Duplicated, a.Lost, a.Unexpected} {
		if len(l) > 0 {
			return l[0]
		}
	}
	return 0
}

// staleCompletion says whether an accepted completion by generation gen, called at call, was
// certainly stale: another claim of the job returned before it was called, after the claim
// that handed out gen had returned (or, where generations are the queue's own and rise, any
// later generation); or the job's final row names another generation.
func staleCompletion(sh model.Shape, gen, call int64, final history.Op, seen bool, claims []genOp) bool {
	if !sh.NoGeneration && seen && final.Output.Found && final.Output.Gen != gen {
		return true
	}
	var handed int64 = -1
	for _, cl := range claims {
		if cl.gen == gen && (handed < 0 || cl.ret < handed) {
			handed = cl.ret
		}
	}
	for _, cl := range claims {
		switch {
		case cl.gen == gen || cl.ret >= call:
		case !sh.NoGeneration && cl.gen > gen:
			return true
		case sh.NoGeneration && handed >= 0 && cl.call > handed:
			return true
		}
	}
	return false
}
