package campaign

import (
	"slices"
	"sync"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/model"
)

// Tally is what a campaign's workers have done so far, updated as operations run so the progress
// line moves during long rounds.
type Tally struct {
	mu         sync.Mutex
	checks     int64 // property runs that completed or failed, shrinking aside
	ops        int64
	histories  int64 // concurrent histories checked
	shrinkRuns int64
	shrinking  int // workers currently minimising a failure
	counts     program.Counts
	stress     *StressRound // the latest stress round that wrote a report folder
	// notPromised is the first thing the queue was seen doing that it does not promise, of
	// each property, in the order found.
	notPromised []*Failure
}

// sawNotPromised keeps f if it is the first not-promised finding of its property, and reports
// whether it was.
func (t *Tally) sawNotPromised(f *Failure) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if slices.ContainsFunc(t.notPromised, func(g *Failure) bool { return g.Property == f.Property }) {
		return false
	}
	if f.foundAt.IsZero() {
		f.foundAt = time.Now()
	}
	t.notPromised = append(t.notPromised, f)
	return true
}

// notPromisedEach is the first not-promised finding of each property, in the order found.
func (t *Tally) notPromisedEach() []*Failure {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.notPromised)
}

func (t *Tally) hasNotPromised(p model.Property) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.ContainsFunc(t.notPromised, func(f *Failure) bool { return f.Property == p })
}

func (t *Tally) setStress(r *StressRound) { t.mu.Lock(); t.stress = r; t.mu.Unlock() }

func (t *Tally) latestStress() *StressRound {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stress
}

// TallySnapshot is a copy of a Tally's numbers.
type TallySnapshot struct {
	Checks, Ops, Histories, ShrinkRuns int64
	Shrinking                          int
	Counts                             program.Counts
}

// Snapshot copies the numbers so far.
func (t *Tally) Snapshot() TallySnapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	return TallySnapshot{t.checks, t.ops, t.histories, t.shrinkRuns, t.shrinking, t.counts}
}

// observe adds the steps of a program being searched and what they exercised.

// AddChecks, AddHistories, AddOps and AddCounts let every mode report its work.
func (t *Tally) AddChecks(n int64)          { t.mu.Lock(); t.checks += n; t.mu.Unlock() }
func (t *Tally) AddHistories(n int64)       { t.mu.Lock(); t.histories += n; t.mu.Unlock() }
func (t *Tally) AddOps(n int64)             { t.mu.Lock(); t.ops += n; t.mu.Unlock() }
func (t *Tally) AddCounts(c program.Counts) { t.mu.Lock(); t.counts.Add(c); t.mu.Unlock() }

func (t *Tally) ShrinkRun()          { t.mu.Lock(); t.shrinkRuns++; t.mu.Unlock() }
func (t *Tally) Shrinking(delta int) { t.mu.Lock(); t.shrinking += delta; t.mu.Unlock() }

// RoundSeed derives a search's seed from the campaign's seed, the worker and the round, so a
// campaign rerun with the same seed and workers repeats each worker's rounds.
func RoundSeed(campaign uint64, worker, round int) uint64 {
	x := campaign ^ uint64(worker)<<48 ^ uint64(round)*0x9E3779B97F4A7C15
	// splitmix64
	x += 0x9E3779B97F4A7C15
	x = (x ^ x>>30) * 0xBF58476D1CE4E5B9
	x = (x ^ x>>27) * 0x94D049BB133111EB
	x ^= x >> 31
	if x == 0 { // rapid reads 0 as "pick a random seed"
		x = 1
	}
	return x
}
