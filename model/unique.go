package model

import "fmt"

// Unique jobs (enqueue_unique.sql, River's UniqueOpts): an enqueue names a key, and inserts
// nothing where a job that holds the key is at no end of its life (ready, running, waiting);
// a key whose job is done, dead or cancelled is free again. The sequential model judges it,
// since it speaks of every job at once; under concurrency a history does not say which jobs
// held the key when.

// PUnique is the promise of unique jobs.
var PUnique = judgedWhere(property(20, "uniqueness", true, false),
	func(c Can) bool { return c.Unique }, "the queue has no enqueue_unique.sql", "unique enqueues")

// OpUnique is an enqueue by a key (Input.Payload the payload): Output.Found and Job where it
// created a job, neither where a live job held the key.
const OpUnique OpKind = "enqueue unique"

func init() { specs[OpUnique] = uniqueSpec{} }

// uniqueSpec is an enqueue that created its job, as any enqueue's, or created none, which
// constrains no job's history.
type uniqueSpec struct{ enqueueSpec }

func (uniqueSpec) facts(_ Input, out Output) Facts {
	return Facts{Job: out.Job, Named: out.Found, Statement: "enqueue unique", Creates: out.Found || out.Outcome == Unknown,
		Accepted: true, Tally: "unique enqueues"}
}
func (uniqueSpec) ignored(_ Input, out Output) bool { return out.Outcome == Returned && !out.Found }
func (uniqueSpec) describe(_ Input, out Output) (string, string) {
	switch {
	case out.Found:
		return "enqueue unique", fmt.Sprintf("job %d", out.Job)
	case out.Outcome == Returned:
		return "enqueue unique", "none: the key is held"
	}
	return "enqueue unique", ""
}

// EnqueueUnique checks what an enqueue of key, run in window at, answered (ok: it created job
// id) and applies it: it must create a job iff no job at no end holds the key.
func (q *Queue) EnqueueUnique(at Window, key string, ok bool, id int64) error {
	holder := int64(0)
	for _, j := range q.ids {
		if s := q.jobs[j]; s.Key == key && !s.State.Terminal() {
			holder = j
		}
	}
	switch {
	case ok && holder != 0:
		return Violate(PUnique, "an enqueue of key %q created job %d, but job %d holds the key and is %s: two jobs not at an end share it", key, id, holder, q.jobs[holder].State)
	case !ok && holder == 0:
		return Violate(PUnique, "an enqueue of key %q created no job, but no job at no end of its life holds the key", key)
	case !ok:
		return nil
	}
	if err := q.Enqueue(id); err != nil {
		return err
	}
	q.jobs[id].Key = key
	return nil
}
