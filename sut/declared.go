package sut

import (
	"time"

	"github.com/pgqcheck/pgqcheck/model"
)

// Declared is everything the model and the modes must know of a queue, in one place: the order
// its claims take jobs in, the shape the model judges it by, the lease it fixes itself, whether
// its ids are its own, and whether it can row-lock a job or rescue expired ones. A folder's comes
// from queue.json and the files present (lock.sql, rescue.sql); a Go queue's from its GoDef and
// the interfaces its GoQueue implements. The zero value, in a GoDef, is the seed's form: claims
// in lowest-id order, each asking for its own lease, of a queue that counts generations, keeps
// done rows and promises fencing.
type Declared struct {
	// Order is the order claims take jobs in ("" in a GoDef: lowest-id).
	Order model.Order
	// Shape is what changes which answers the model takes as legal. Its forms change the
	// contract too. NoGeneration: claim.sql returns id and then its token columns, complete.sql
	// takes the id and the token, and the suite numbers each job's claims itself, so fencing is
	// judged on the token and property 3 is not judged. DoneDeleted: snapshot.sql lists live
	// jobs only. RescueOnly: rescue.sql makes the jobs whose lease ended ready, which a claim
	// never takes. Unfenced: stale completions are measured and reported as not promised.
	// TxBound: a claim holds a transaction open on the worker's session while the job runs and
	// the completion commits inside it, so the lease ends with that transaction (a Go queue's
	// form; see GoQueue).
	Shape model.Shape
	// FixedLease is the lease the queue fixes itself: claim.sql then takes no lease length, and
	// the model judges every claim by this length (0: each claim asks for its own).
	FixedLease time.Duration
	// OpaqueIDs: ids are uuid or text; the suite numbers jobs in enqueue order.
	OpaqueIDs bool
	// ClaimsAlone: the queue's workers always claim in a statement of its own, never inside a
	// transaction that began earlier, so no claim is drawn inside one. Without it a claim may run
	// inside a longer transaction, and must read the clock, not the transaction's start.
	ClaimsAlone bool
	// WorkAlone: the queue runs its enqueues, claims, completions and failures on connections
	// of its own, never inside a caller's transaction (a Go queue whose worker owns the
	// transaction that holds its job), so none of them is drawn inside one. It implies
	// ClaimsAlone.
	WorkAlone bool

	// What the queue can do beyond the contract's core, found by the backend's constructor in
	// what the queue ships: lock.sql or a GoLocker, rescue.sql. (The lifecycle's capabilities
	// are in Shape.Life, which judges by them.)
	locks, rescues bool
}

// CanLock reports whether the queue can row-lock a job (lock.sql, or a GoLocker); without it
// lockers cannot run.
func (d Declared) CanLock() bool { return d.locks }

// CanRescue reports whether the queue has a rescue step (rescue.sql).
func (d Declared) CanRescue() bool { return d.rescues }

// Shape is the part of the declaration the specification judges by.
func (q *Queue) Shape() model.Shape { return q.Declared.Shape }
