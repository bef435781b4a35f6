package model

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

// An enqueue of a key a job at no end holds creates nothing; one of a free key creates a job,
// and a key whose job ended is free again.
func TestUnique(t *testing.T) {
	q := New(LowestID)
	q.Shape.Can = Can{Unique: true, Cancel: true}
	mustNil(t, q.EnqueueUnique(ms(0), "a", true, 1))
	wantViolation(t, q.Clone().EnqueueUnique(ms(1), "a", true, 2), PUnique, "job 1 holds the key")
	mustNil(t, q.EnqueueUnique(ms(1), "a", false, 0))
	wantViolation(t, q.Clone().EnqueueUnique(ms(1), "b", false, 0), PUnique, "no job at no end")
	mustNil(t, q.Claim(ms(2), hour, true, 1, 1))
	mustNil(t, q.EnqueueUnique(ms(3), "a", false, 0)) // running holds it too
	mustNil(t, q.Complete(ms(4), 1, 1, 1))
	wantViolation(t, q.Clone().EnqueueUnique(ms(5), "a", false, 0), PUnique, "no job at no end")
	mustNil(t, q.EnqueueUnique(ms(5), "a", true, 2))
	mustNil(t, q.Cancel(ms(6), 2, 1))
	mustNil(t, q.EnqueueUnique(ms(7), "a", true, 3))
}

// Under concurrency an enqueue that created its job is an enqueue; one that created none
// constrains no job.
func TestLinearUnique(t *testing.T) {
	unique := func(c int, call, ret, id int64) porcupine.Operation {
		return op(c, call, ret, Input{Kind: OpUnique}, Output{Found: id != 0, Job: id})
	}
	h := []porcupine.Operation{unique(0, 1, 2, 1), unique(1, 1, 3, 0), claimed(2, 4, 5, 1, 1)}
	if !porcupine.CheckOperations(Shape{Can: Can{Unique: true}}.Porcupine(), h) {
		t.Error("a unique enqueue, one refused beside it, and a claim of the job are not linearizable")
	}
	twice := []porcupine.Operation{unique(0, 1, 2, 1), unique(1, 3, 4, 1)}
	if porcupine.CheckOperations(Shape{Can: Can{Unique: true}}.Porcupine(), twice) {
		t.Error("two enqueues returning one id are linearizable")
	}
}
