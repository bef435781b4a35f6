package model

import "strings"

// Shape is what a queue declares about itself that changes which answers are legal. The zero
// value is the seed's shape: a generation counter, done rows kept, claims that reclaim expired
// leases, fencing promised.
type Shape struct {
	// NoGeneration: the queue keeps no generation counter; the suite numbers each job's claims
	// itself, in the order their answers came back. A claim's number then only has to be new,
	// and property 3 is not judged.
	NoGeneration bool `json:"no_generation,omitempty"`
	// DoneDeleted: a finished job's row is deleted or moved away. A snapshot that lacks a done
	// job is right; one that holds it again shows a deleted job come back.
	DoneDeleted bool `json:"done_deleted,omitempty"`
	// DeadDeleted: a job that failed for good or ran out of attempts is deleted too (a queue
	// that discards such jobs); a snapshot that lacks a dead job is right.
	DeadDeleted bool `json:"dead_deleted,omitempty"`
	// RescueOnly: a claim need not take a running job whose lease ended; the queue's rescue step
	// makes such jobs ready. (A claim that does take one is still legal.)
	RescueOnly bool `json:"rescue_only,omitempty"`
	// Unfenced: the queue does not promise fencing. A completion that a fenced queue must refuse
	// is measured and reported as not promised, and the job is done from then on; so is a
	// failure by a replaced or expired owner of a running job, which then applies as that
	// owner's attempt would have.
	Unfenced bool `json:"unfenced,omitempty"`
	// TxBound: a claim's lease is the transaction it holds open; when that transaction ends
	// without the completion (expired: aborted, its backend terminated) the job is ready again.
	TxBound bool `json:"tx_bound,omitempty"`
	// Waits: the queue's own steps may wait for a row lock another session holds (River's
	// rescuer locks a stuck job's row): skip-don't-wait (property 5) is measured, and not
	// promised.
	Waits bool `json:"waits,omitempty"`
	// Can is what the queue ships beyond the contract's core.
	Can Can `json:"can,omitzero"`
	// Life is how the rest of a job's life goes, where the queue ships it: failures, retries,
	// dead jobs, renewals, run-at times, business effects.
	Life Lifecycle `json:"life,omitzero"`
}

// Deletes reports whether the queue deletes a job once it is in state s.
func (sh Shape) Deletes(s State) bool {
	return s == Done && sh.DoneDeleted || s == Dead && sh.DeadDeleted
}

// deletable names the states whose jobs the queue deletes.
func (sh Shape) deletable() string {
	switch {
	case sh.DoneDeleted && sh.DeadDeleted:
		return "done or dead"
	case sh.DeadDeleted:
		return "dead"
	}
	return "done"
}

// deletedBack is the property a deleted job that came back breaks: done at most once for a
// done job, the retries' end for a dead one.
func deletedBack(s State) Property {
	if s == Dead {
		return PRetries
	}
	return PDoneOnce
}

// Promised reports whether the queue promises property p.
func (sh Shape) Promised(p Property) bool {
	switch p {
	case PFencing, PWriteFencing:
		return !sh.Unfenced
	case PSkipLocked:
		return !sh.Waits
	}
	return true
}

// Judged reports whether property p is judged on the queue at all: a queue without a
// generation counter has no generations to judge, and the lifecycle's properties are judged
// where the queue ships what they speak of.
func (sh Shape) Judged(p Property) bool { return sh.NotJudged(p) == "" }

// NotJudged says why property p is not judged on the queue ("" when it is).
func (sh Shape) NotJudged(p Property) string {
	c := sh.Can
	if i := properties[p]; i.needs != nil && !i.needs(c) {
		return i.lacks
	}
	switch {
	case p == PGenerations && sh.NoGeneration:
		return "the queue declares no generation counter"
	case p == PWriteFencing && !c.Fail && !c.Renews():
		return "the queue has neither fail.sql nor renew.sql"
	case (p == PRetries || p == PDrain) && !c.Fail:
		return "the queue has no fail.sql"
	case p == PRenewal && !c.Renews():
		return "the queue has no renew.sql"
	case p == PScheduling && !c.Delay && !c.Fail:
		return "the queue schedules no job for later (no run-at delay, no backoff)"
	case p == PEffects && !c.Effect:
		return "the queue has no effect.sql"
	}
	return ""
}

// String names the declared forms, for banners and reports ("" for the seed's shape).
func (sh Shape) String() string {
	var forms []string
	if sh.NoGeneration {
		forms = append(forms, "no generation counter")
	}
	if sh.DoneDeleted {
		forms = append(forms, "done rows deleted")
	}
	if sh.DeadDeleted {
		forms = append(forms, "dead rows deleted")
	}
	if sh.RescueOnly {
		forms = append(forms, "expired jobs rescued")
	}
	if sh.Unfenced {
		forms = append(forms, "fencing not promised")
	}
	if sh.TxBound {
		forms = append(forms, "claims hold a transaction")
	}
	forms = append(forms, sh.Life.forms(sh.Can)...)
	return strings.Join(forms, ", ")
}

// claimable says whether a claim in window at must be able to take a job (Live), may
// (Uncertain) or must not (Over), row locks aside: a ready job once it is due, a running one once
// its lease is over, neither once its attempts ran out where claims count them. must: where the
// queue rescues expired jobs, a claim is never obliged to take a running one (it may).
func (sh Shape) claimable(st State, until, due Window, attempts int64, at Window, must bool) Liveness {
	lc := sh.Life
	switch {
	case lc.AttemptsAtClaim && lc.exhausted(attempts):
		return Over
	case st == Ready:
		return dueAt(due, at)
	case st == Running && must && sh.RescueOnly:
		return Over
	case st == Running:
		return Live - leaseAt(until, at) // the reverse of the lease's liveness
	}
	return Over
}

// PropertyNamed finds a property by its short name ("fencing", "mutual exclusion" or
// "mutual-exclusion").
func PropertyNamed(name string) (Property, bool) {
	name = strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "-", " ")
	for p, i := range properties {
		if i.name == name {
			return p, true
		}
	}
	return 0, false
}
