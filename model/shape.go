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
	// RescueOnly: a claim need not take a running job whose lease ended; the queue's rescue step
	// makes such jobs ready. (A claim that does take one is still legal.)
	RescueOnly bool `json:"rescue_only,omitempty"`
	// Unfenced: the queue does not promise fencing. A completion that a fenced queue must refuse
	// is measured and reported as not promised, and the job is done from then on.
	Unfenced bool `json:"unfenced,omitempty"`
	// TxBound: a claim's lease is the transaction it holds open; when that transaction ends
	// without the completion (expired: aborted, its backend terminated) the job is ready again.
	TxBound bool `json:"tx_bound,omitempty"`
}

// Promised reports whether the queue promises property p.
func (sh Shape) Promised(p Property) bool {
	return p != PFencing || !sh.Unfenced
}

// Judged reports whether property p is judged on the queue at all: a queue without a
// generation counter has no generations to judge.
func (sh Shape) Judged(p Property) bool {
	return p != PGenerations || !sh.NoGeneration
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
	if sh.RescueOnly {
		forms = append(forms, "expired jobs rescued")
	}
	if sh.Unfenced {
		forms = append(forms, "fencing not promised")
	}
	if sh.TxBound {
		forms = append(forms, "claims hold a transaction")
	}
	return strings.Join(forms, ", ")
}

// mustClaim says whether a claim in window at must be able to take a job (Live), may (Uncertain)
// or must not (Over), row locks aside. Where the queue rescues expired jobs, a claim is never
// obliged to take a running one; it may.
func (sh Shape) mustClaim(st State, until, at Window) Liveness {
	if sh.RescueOnly && st == Running {
		return Over
	}
	return claimableAt(st, until, at)
}

// PropertyNamed finds a property by its short name ("fencing", "mutual exclusion" or
// "mutual-exclusion").
func PropertyNamed(name string) (Property, bool) {
	name = strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "-", " ")
	for p, n := range propertyNames {
		if n == name {
			return p, true
		}
	}
	return 0, false
}
