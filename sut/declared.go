package sut

import (
	"time"

	"github.com/pgqcheck/pgqcheck/model"
)

// Declared is everything the model and the modes must know of a queue, in one place: the order
// its claims take jobs in, the shape the model judges it by (with what the queue ships beyond
// the contract's core, Shape.Can), the lease it fixes itself, and whether its ids are its own.
// A folder's comes from queue.json and the files present; a Go queue's from its GoDef and the
// interfaces its GoQueue implements. The zero value, in a GoDef, is the seed's form: claims
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
	// ClaimsOutsideTxns: the queue's workers always claim in a statement of its own, never inside a
	// transaction that began earlier, so no claim is drawn inside one. Without it a claim may run
	// inside a longer transaction, and must read the clock, not the transaction's start.
	ClaimsOutsideTxns bool
	// OwnsTransactions: the queue runs its enqueues, claims, completions and failures on connections
	// of its own, never inside a caller's transaction (a Go queue whose worker owns the
	// transaction that holds its job), so none of them is drawn inside one. It implies
	// ClaimsAlone.
	OwnsTransactions bool
}

// Can is what the queue ships beyond the contract's core (Shape.Can), made once, as the queue
// is loaded, from the optional files a folder holds or the interfaces a Go queue implements
// (GoLocker, GoRescuer, GoFailer, ...): lock.sql, rescue.sql, fail.sql, renew.sql (per claim,
// or by worker where leases are the worker's), a run-at delay (known once installed), effect.sql
// with effects.sql.
func (d Declared) Can() model.Can { return d.Shape.Can }

// Shape is the part of the declaration the specification judges by.
func (q *Queue) Shape() model.Shape { return q.Declared.Shape }
