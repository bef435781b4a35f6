package model

import (
	"fmt"
	"sort"
	"time"
)

// The sequential specification of the lifecycle's operations: a failure reported by a job's
// owner, a renewal of its lease (per job, or a worker's heartbeat), and the business effects
// that commit with completions.

// Fail checks the rows a fail(id, gen, retryable, text) in window at reported, and applies it.
// Like a completion, it must change the job iff the generation owns a live lease: then the job
// counts the attempt (where attempts end counted), keeps the text, and goes dead (its attempts
// ran out, or the failure is not retryable) or waits its backoff.
func (q *Queue) Fail(at Window, id, gen int64, retryable bool, text string, rows int64) error {
	want := q.CompleteWouldSucceed(at, id, gen)
	j := q.jobs[id]
	switch {
	case rows != 0 && rows != 1:
		return Violate(PWriteFencing, "fail(%d, gen %d) reported %d rows; a failure changes 0 or 1", id, gen, rows)
	case want == Live && rows == 0:
		return Violate(PWriteFencing, "fail(%d, gen %d) at %s by the current owner changed 0 rows, though its lease was certainly live: %s; the failure is lost", id, gen, at, j.lease())
	case want == Over && rows == 1:
		v := q.staleWrite("fail", at, id, gen, j)
		if v.Property != PWriteFencing || q.Shape.Promised(PWriteFencing) || j == nil || j.State != Running {
			return v
		}
		// Not promised: the failure took effect, as the queue says, and the run goes on.
		v.NotPromised = true
		q.failed(j, at, gen, retryable, text)
		return v
	case want == Uncertain && rows == 0:
		j.Until = j.Until.NotAfter(at.To)
	}
	if rows == 1 {
		q.failed(j, at, gen, retryable, text)
	}
	return nil
}

// failed applies an accepted failure of job j by generation gen.
func (q *Queue) failed(j *Job, at Window, gen int64, retryable bool, text string) {
	lc := q.Shape.Life
	if !lc.AttemptsAtClaim {
		j.Attempts++
	}
	j.State, j.Due = lc.failed(lc.attemptsOf(j.Attempts, j.Generation, gen), retryable, at)
	j.Kept, j.Failed = text, true
	j.Until, j.Lease, j.Claimed, j.Owner, j.Renewed = Window{}, 0, Window{}, "", false
}

// staleWrite is the promise a fail or renewal of job j that changed a row broke, where it must
// have changed nothing.
func (q *Queue) staleWrite(what string, at Window, id, gen int64, j *Job) *Violation {
	call := fmt.Sprintf("%s(%d, gen %d)", what, id, gen)
	if j == nil {
		return staleWriteOf(call, what, false, "", 0, gen, at, "")
	}
	return staleWriteOf(call, what, true, j.State, j.Generation, gen, at, j.lease())
}

// Renew checks the rows a renew(id, gen, lease) in window at reported, and applies it: it must
// extend the lease iff the generation owns a live lease, to lease from the renewal on.
func (q *Queue) Renew(at Window, id, gen int64, lease time.Duration, rows int64) error {
	want := q.CompleteWouldSucceed(at, id, gen)
	j := q.jobs[id]
	switch {
	case rows != 0 && rows != 1:
		return Violate(PRenewal, "renew(%d, gen %d) reported %d rows; a renewal changes 0 or 1", id, gen, rows)
	case want == Live && rows == 0:
		return Violate(PRenewal, "renew(%d, gen %d) at %s by the current owner changed 0 rows, though its lease was certainly live: %s", id, gen, at, j.lease())
	case want == Over && rows == 1:
		return q.staleWrite("renew", at, id, gen, j)
	case want == Uncertain && rows == 0:
		j.Until = j.Until.NotAfter(at.To)
	case rows == 1:
		j.renewed(at, lease)
	}
	return nil
}

// renewed sets the lease of a job whose renewal in window at was accepted: it was live then,
// and ends lease later.
func (j *Job) renewed(at Window, lease time.Duration) {
	j.Until, j.Lease, j.Claimed, j.Renewed = at.Shift(lease), lease, at, true
}

// Heartbeat checks what worker's heartbeat in window at, asking for lease, answered (the jobs
// whose leases it extended) and applies it: it must extend every live lease the worker holds
// that no row lock keeps it from, and no other.
func (q *Queue) Heartbeat(at Window, worker string, lease time.Duration, ids []int64) error {
	took := map[int64]bool{}
	for _, id := range ids {
		j, ok := q.jobs[id]
		switch {
		case !ok:
			return Violate(PRecovery, "%s's heartbeat extended job %d, which was never enqueued", worker, id)
		case took[id]:
			return Violate(PRenewal, "%s's heartbeat extended job %d twice", worker, id)
		case j.State != Running || j.Owner != worker:
			return Violate(PWriteFencing, "%s's heartbeat extended job %d, which is %s under %q's claim: not a lease of %s's", worker, id, j.State, j.Owner, worker)
		case j.LeaseAt(at) == Over:
			return Violate(PRenewal, "%s's heartbeat at %s extended job %d, whose lease was certainly over: %s; the renewal revived a lapsed lease", worker, at, id, j.lease())
		}
		took[id] = true
	}
	for _, id := range q.ids {
		j := q.jobs[id]
		if j.State != Running || j.Owner != worker || j.Locked {
			continue
		}
		switch l := j.LeaseAt(at); {
		case took[id]:
			j.Until = j.Until.NotBefore(at.From)
			j.renewed(at, lease)
		case l == Live:
			return Violate(PRenewal, "%s's heartbeat at %s left job %d to lapse, though its lease was certainly live: %s", worker, at, id, j.lease())
		case l == Uncertain:
			j.Until = j.Until.NotAfter(at.To)
		}
	}
	return nil
}

// Effect records a business effect that committed with its transaction, which holds the job's
// accepted completion: the suite's ledger of the effects it caused.
func (q *Queue) Effect(id int64) { q.effects[id]++ }

// Effects is how many business effects of a job the ledger holds.
func (q *Queue) Effects(id int64) int { return q.effects[id] }

// EffectCount is one job's count in the queue's business table.
type EffectCount struct {
	Job   int64
	Count int64
}

// CheckEffects compares the business table's counts with the ledger: every job holds exactly
// the effects of its completions that committed, one where its accepted completion carried
// one, none for a completion that was stale, expired or refused.
func (q *Queue) CheckEffects(got []EffectCount) error {
	held := map[int64]int64{}
	for _, e := range got {
		if _, ok := q.jobs[e.Job]; !ok {
			return Violate(PEffects, "the business table holds %s of job %d, which was never enqueued", effectsWord(e.Count), e.Job)
		}
		held[e.Job] += e.Count
	}
	ids := append([]int64(nil), q.ids...)
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	for _, id := range ids {
		want, n := int64(q.effects[id]), held[id]
		switch j := q.jobs[id]; {
		case n > want && want == 0:
			return Violate(PEffects, "the business table holds %s of job %d (%s), but no completion of it committed with its effect: a refused, stale or expired completion left its effect", effectsWord(n), id, j.State)
		case n > want:
			return Violate(PEffects, "the business table holds %s of job %d, but one completion committed with its effect: the effect was applied %d times", effectsWord(n), id, n)
		case n < want:
			return Violate(PEffects, "the business table holds %s of job %d, but its completion committed with one: the effect was lost", effectsWord(n), id)
		}
	}
	return nil
}

func effectsWord(n int64) string {
	if n == 1 {
		return "1 effect"
	}
	return fmt.Sprintf("%d effects", n)
}
