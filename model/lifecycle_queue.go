package model

import (
	"sort"
	"time"
)

// The sequential specification of the lifecycle's operations: a failure reported by a job's
// owner, a renewal of its lease (per job, or a worker's heartbeat), and the business effects
// that commit with completions. Each is the step the concurrent model takes (kinds_lifecycle.go);
// a heartbeat, which speaks of every job its worker holds, is judged job by job.

// Fail checks the rows a fail(id, gen, retryable, text) in window at reported, and applies it.
func (q *Queue) Fail(at Window, id, gen int64, retryable bool, text string, rows int64) error {
	return errOf(q.step(id, Input{Kind: OpFail, Job: id, Gen: gen, At: at, Retryable: retryable, Text: text}, Output{Rows: rows}))
}

// Renew checks the rows a renew(id, gen, lease) in window at reported, and applies it.
func (q *Queue) Renew(at Window, id, gen int64, lease time.Duration, rows int64) error {
	return errOf(q.step(id, Input{Kind: OpRenew, Job: id, Gen: gen, At: at, Lease: lease}, Output{Rows: rows}))
}

// Heartbeat checks what worker's heartbeat in window at, asking for lease, answered (the jobs
// whose leases it extended) and applies it: it must extend every live lease the worker holds
// that no row lock keeps it from, and no other.
func (q *Queue) Heartbeat(at Window, worker string, lease time.Duration, ids []int64) error {
	in := Input{Kind: OpRenew, Worker: worker, At: at, Lease: lease}
	took := map[int64]JobState{}
	for _, id := range ids {
		if _, twice := took[id]; twice {
			return Violate(PRenewal, "%s's heartbeat extended job %d twice", worker, id)
		}
		next, v := specOf(OpRenew).step(q.Shape, q.state(id), in, Output{Found: true, Job: id})
		if v != nil {
			return v
		}
		took[id] = next
	}
	for _, id := range q.ids {
		if next, ok := took[id]; ok {
			// A row another session holds locked is left as it was: a heartbeat that named it
			// could not have extended it without waiting, which a sequential run does not do.
			if !q.jobs[id].Locked {
				q.set(id, next)
			}
			continue
		}
		in.Job = id
		if v := q.step(id, in, Output{}); v != nil {
			return v
		}
	}
	return nil
}

// Effect records a business effect written in its transaction, which also holds the job's
// completion: the suite's ledger of the effects it caused. A transaction that does not commit
// takes its effect with it (the runner restores the model as it was before).
func (q *Queue) Effect(id int64) {
	if j, ok := q.jobs[id]; ok {
		j.Effects++
	}
}

// Effects is how many business effects of a job the ledger holds.
func (q *Queue) Effects(id int64) int { return int(q.state(id).Effects) }

// EffectCount is one job's count in the queue's business table.
type EffectCount struct {
	Job   int64
	Count int64
}

// CheckEffects compares the business table's counts with the ledger, job by job (effectsSpec).
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
		if v := q.step(id, Input{Kind: OpEffects, Job: id}, Output{Rows: held[id]}); v != nil {
			return v
		}
	}
	return nil
}
