package main

import (
	"strconv"
	"strings"
)

// Counts says what a campaign actually exercised, read from the programs' traces: a run that
// "held" for an hour means little if it never presented a stale generation.
type Counts struct {
	Enqueued             int64 `json:"enqueued"`
	Claims               int64 `json:"claims"`                  // claims that returned a job
	EmptyClaims          int64 `json:"empty_claims"`            // claims that returned nothing
	Completions          int64 `json:"completions"`             // completions that changed 1 row
	RejectedCompletions  int64 `json:"rejected_completions"`    // completions refused (0 rows): stale generation, lapsed lease or finished job
	StaleTokenCompletion int64 `json:"stale_token_completions"` // completions presenting an older token than the worker's newest
	Expiries             int64 `json:"expiries"`
	Pauses               int64 `json:"pauses"` // a worker paused past its lease (its newest job expired)
	Locks                int64 `json:"locks"`
	Releases             int64 `json:"releases"`
	Cancels              int64 `json:"cancelled_lockers"`
	Terminates           int64 `json:"terminated_lockers"`
	Crashes              int64 `json:"crashes"`
	Drains               int64 `json:"drains"`
	DrainedJobs          int64 `json:"drained_jobs"`
	ShortLeases          int64 `json:"short_leases"`
	Errors               int64 `json:"errors"`
	ClaimWaits           int64 `json:"claim_waits"` // stress: claims seen waiting behind an injected row lock (observations)
	Other                int64 `json:"other"`
}

// Add accumulates o into c.
func (c *Counts) Add(o Counts) {
	c.Enqueued += o.Enqueued
	c.ClaimWaits += o.ClaimWaits
	c.Claims += o.Claims
	c.EmptyClaims += o.EmptyClaims
	c.Completions += o.Completions
	c.RejectedCompletions += o.RejectedCompletions
	c.StaleTokenCompletion += o.StaleTokenCompletion
	c.Expiries += o.Expiries
	c.Pauses += o.Pauses
	c.Locks += o.Locks
	c.Releases += o.Releases
	c.Cancels += o.Cancels
	c.Terminates += o.Terminates
	c.Crashes += o.Crashes
	c.Drains += o.Drains
	c.DrainedJobs += o.DrainedJobs
	c.ShortLeases += o.ShortLeases
	c.Errors += o.Errors
	c.Other += o.Other
}

// Observe counts one trace line of a program (program.Env.Trace): the operation as it prints
// itself, then " -> " and the queue's answer when there is one.
func (c *Counts) Observe(line string) {
	op, answer, _ := strings.Cut(line, " -> ")
	op = strings.TrimSpace(op)
	answer = strings.TrimSpace(answer)
	if answer == "error" || answer == "waited for a lock" {
		c.Errors++
	}
	f := strings.Fields(op)
	switch {
	case len(f) == 2 && f[0] == "enqueue":
		n, _ := strconv.ParseInt(f[1], 10, 64)
		c.Enqueued += n
	case len(f) == 2 && f[1] == "claim":
		switch {
		case answer == "none":
			c.EmptyClaims++
		case strings.HasPrefix(answer, "job "):
			c.Claims++
		}
	case len(f) >= 3 && f[1] == "complete":
		if f[2] != "newest" {
			c.StaleTokenCompletion++
		}
		switch {
		case strings.HasSuffix(answer, ": 1 row"):
			c.Completions++
		case strings.HasSuffix(answer, ": 0 rows"):
			c.RejectedCompletions++
		}
	case len(f) == 3 && f[0] == "expire":
		c.Expiries++
	case len(f) >= 2 && f[1] == "pause":
		c.Pauses++
	case len(f) == 4 && f[1] == "lock":
		c.Locks++
	case len(f) == 2 && strings.HasPrefix(f[0], "locker"):
		c.Releases++
		switch f[1] {
		case "cancel":
			c.Cancels++
		case "terminate":
			c.Terminates++
		}
	case len(f) == 2 && f[1] == "crash":
		c.Crashes++
	case len(f) == 2 && f[1] == "drain":
		c.Drains++
		if n, err := strconv.ParseInt(strings.Fields(answer + " x")[0], 10, 64); err == nil {
			c.DrainedJobs += n
		}
	case len(f) > 2 && f[1] == "claim" && strings.Contains(op, "lease"):
		c.ShortLeases++
		// The short-lease operation's answer is the claim's, then the completion's.
		claimAns, completeAns, _ := strings.Cut(answer, "; ")
		switch {
		case claimAns == "none":
			c.EmptyClaims++
		case strings.HasPrefix(claimAns, "job "):
			c.Claims++
		}
		switch {
		case strings.HasSuffix(completeAns, ": 1 row"):
			c.Completions++
		case strings.HasSuffix(completeAns, ": 0 rows"):
			c.RejectedCompletions++
		}
	default:
		c.Other++
	}
}
