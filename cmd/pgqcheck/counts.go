package main

import "pgqcheck/program"

// Counts says what a campaign actually exercised: a run that "held" for an hour means little
// if it never presented a stale generation. Sequential programs count their steps as they run
// (program.Counts); stress mode adds its own, and what it alone observes.
type Counts struct {
	program.Counts
	ClaimWaits int64 `json:"claim_waits"` // stress: claims seen waiting behind an injected row lock (observations)
}

// Add accumulates o into c.
func (c *Counts) Add(o Counts) {
	c.Counts.Add(o.Counts)
	c.ClaimWaits += o.ClaimWaits
}
