package sut

import (
	"fmt"
	"time"

	"github.com/pgqcheck/pgqcheck/model"
)

// The job lifecycle's part of the contract (model.Lifecycle): what fail.sql, renew.sql,
// effect.sql, effects.sql and reset.sql add, and the queue.json keys that say how attempts,
// backoffs and leases work.
//
//	"max_attempts": 3                           attempts a job may have; then a failure makes it dead
//	"backoff": {"base": "200ms", "factor": 2}   a failed job is due again base x factor^(n-1) after its n-th attempt
//	"attempts": "end" | "claim"                 the counter rises when an attempt fails (default), or at every claim
//	"lapse": "free" | "attempt"                 whether a lapsed lease counts as an attempt (the rescue step counts it)
//	"rescue_backoff": true                      the rescue step makes a lapsed job due only after its backoff
//	"lease_owner": "claim" | "worker"           a lease is the claim's (default), or its worker's: renew.sql then
//	                                            takes $1 the worker's name, $2 the lease, and returns one row per
//	                                            job it extended (id), so that a worker's jobs lapse together
//
// With fail.sql, snapshot.sql returns attempts (integer) and the kept error text after
// lease_live, and a job's state may be dead. An enqueue.sql that takes a second parameter, an
// interval, gets each job's run-at delay; a claim.sql whose lease is an integer takes it in whole
// seconds (the suite rounds each lease up). reset.sql runs after every reset, for state the
// queue needs that TRUNCATE empties (a settings row).

const lifeKeys = `"max_attempts", "backoff", "attempts", "lapse", "rescue_backoff", "lease_owner"`

// lifeConfig is queue.json's lifecycle vocabulary.
type lifeConfig struct {
	MaxAttempts *int64 `json:"max_attempts"`
	Backoff     *struct {
		Base   string `json:"base"`
		Factor *int64 `json:"factor"`
	} `json:"backoff"`
	Attempts      string `json:"attempts"`
	Lapse         string `json:"lapse"`
	RescueBackoff bool   `json:"rescue_backoff"`
	LeaseOwner    string `json:"lease_owner"`
}

// declareLife reads the lifecycle's keys and returns one it found, for lifecycleFiles to check
// against the files there.
func (d *Declared) declareLife(c lifeConfig) (lifeKey string, err error) {
	lc := &d.Shape.Life
	if c.MaxAttempts != nil {
		if *c.MaxAttempts < 1 {
			return "", fmt.Errorf("max_attempts %d is not a positive number; give how many attempts a job may have, as 3", *c.MaxAttempts)
		}
		lc.MaxAttempts, lifeKey = *c.MaxAttempts, "max_attempts"
	}
	if b := c.Backoff; b != nil {
		base, err := time.ParseDuration(b.Base)
		if err != nil || base < 0 {
			return "", fmt.Errorf("backoff base %q is not a duration; give how long a failed job waits, as {\"base\": \"200ms\", \"factor\": 2}", b.Base)
		}
		lc.Backoff, lc.Factor, lifeKey = base, 1, "backoff"
		if b.Factor != nil {
			if *b.Factor < 1 {
				return "", fmt.Errorf("backoff factor %d is less than 1; the backoff grows by a whole factor (1 keeps it constant)", *b.Factor)
			}
			lc.Factor = *b.Factor
		}
	}
	switch c.Attempts {
	case "", "end":
	case "claim":
		lc.AttemptsAtClaim, lc.LapsesCount, lifeKey = true, true, "attempts"
	default:
		return "", fmt.Errorf("attempts %q is unknown; use \"end\" (the counter rises when an attempt fails) or \"claim\" (at every claim)", c.Attempts)
	}
	switch c.Lapse {
	case "", "free":
		if c.Lapse != "" && lc.AttemptsAtClaim {
			return "", fmt.Errorf("lapse \"free\" with attempts \"claim\": every claim is an attempt, so a lapsed lease counts; leave lapse out or use \"attempt\"")
		}
	case "attempt":
		lc.LapsesCount, lifeKey = true, "lapse"
	default:
		return "", fmt.Errorf("lapse %q is unknown; use \"free\" (a lapsed lease is retried without counting) or \"attempt\" (it counts as an attempt)", c.Lapse)
	}
	if c.RescueBackoff {
		lc.RescueBackoff, lifeKey = true, "rescue_backoff"
	}
	switch c.LeaseOwner {
	case "", "claim":
	case "worker":
		lc.WorkerLease = true
	default:
		return "", fmt.Errorf("lease_owner %q is unknown; use \"claim\" (each claim's lease is its own) or \"worker\" (the worker's heartbeat renews all its leases)", c.LeaseOwner)
	}
	return lifeKey, nil
}

// lifecycleFiles checks the lifecycle's files against each other and queue.json, and records
// what they make the queue do.
func (q *Queue) lifecycleFiles(lifeKey string) error {
	lc, can := &q.Declared.Shape.Life, &q.Declared.Shape.Can
	can.Fail, can.Effect = q.Fail != "", q.Effect != "" && q.Effects != ""
	can.Renew, can.Heartbeat = q.Renew != "" && !lc.WorkerLease, q.Renew != "" && lc.WorkerLease
	switch {
	case lifeKey != "" && !can.Fail:
		return &ContractError{q.Source, FileFail, fmt.Sprintf("missing; queue.json declares %q, which speaks of failed attempts (%s)", lifeKey, contractLines[FileFail])}
	case q.Effect != "" && q.Effects == "":
		return &ContractError{q.Source, FileEffects, "missing; effect.sql writes business effects, and the suite counts them with effects.sql (" + contractLines[FileEffects] + ")"}
	case q.Effects != "" && q.Effect == "":
		return &ContractError{q.Source, FileEffect, "missing; effects.sql counts business effects, which effect.sql writes (" + contractLines[FileEffect] + ")"}
	case lc.WorkerLease && !can.Heartbeat:
		return &ContractError{q.Source, FileRenew, "missing; queue.json declares \"lease_owner\": \"worker\", whose heartbeat renews the worker's leases ($1 worker name, $2 lease -> one row per job it extended: id)"}
	case lc.LapsesCount && !q.Shape().RescueOnly:
		return &ContractError{q.Source, FileConfig, "a lapsed lease counts as an attempt here, so declare \"reclaim\": \"rescue\": the rescue step decides whether a lapsed job is retried or dead"}
	case lc.RescueBackoff && !can.Rescue:
		return &ContractError{q.Source, FileRescue, "missing; queue.json declares \"rescue_backoff\", which is the rescue step's (" + contractLines[FileRescue] + ")"}
	}
	return nil
}

// leaseArg is a lease as the queue takes it: an interval, or whole seconds rounded up.
func leaseArg(lc model.Lifecycle, d time.Duration) any {
	if lc.WholeSeconds {
		return int64(lc.Lease(d) / time.Second)
	}
	return d
}
