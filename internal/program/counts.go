package program

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/pgqcheck/pgqcheck/model"
)

// Counts says what steps exercised, so that a campaign that "held" can show it presented
// stale generations, refused completions and expiries. Env.Step keeps them from the operations
// and the queue's answers as they run, not from how steps print.
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
	Interrupts           int64 `json:"cancelled_lockers"` // pg_cancel_backend, as reports have always named it
	Terminates           int64 `json:"terminated_lockers"`
	Crashes              int64 `json:"crashes"`
	Drains               int64 `json:"drains"`
	DrainedJobs          int64 `json:"drained_jobs"`
	ShortLeases          int64 `json:"short_leases"`
	TimedClaims          int64 `json:"timed_claims"` // claims asking a lease of their own length, which ends by itself
	RealPauses           int64 `json:"real_pauses"`  // steps that let real time pass
	PausedMillis         int64 `json:"paused_ms"`    // how long they paused in all
	TxnClaims            int64 `json:"txn_claims"`   // claims inside a transaction operation
	Errors               int64 `json:"errors"`       // statements that failed (property 9)
	// EdgeLandings counts the statements a pause to just before a lease's edge landed where it
	// aimed (Approach.Aimed): the chances a lease read a few milliseconds early has
	// to show.
	EdgeLandings int64 `json:"edge_landings,omitempty"`
	// NotPromised counts what the queue did that it declares it does not promise (stale
	// completions of an at-least-once queue): measured, reported, failing nothing.
	NotPromised int64 `json:"not_promised,omitempty"`
	// What only concurrent histories show.
	Ops        int64 `json:"ops,omitempty"`         // recorded operations, observations included
	Snapshots  int64 `json:"snapshots,omitempty"`   // snapshot statements
	Unknown    int64 `json:"unknown,omitempty"`     // operations whose outcome never came back
	Aborted    int64 `json:"aborted,omitempty"`     // operations rolled back with their transaction
	ClaimWaits int64 `json:"claim_waits,omitempty"` // claims seen waiting behind an injected row lock (observations)
	// Fault proxy faults that hit a statement: replies dropped after the server answered,
	// connections cut mid-request, replies delayed, requests stalled mid-message.
	DroppedReplies int64 `json:"dropped_replies,omitempty"`
	Cuts           int64 `json:"cut_connections,omitempty"`
	Delays         int64 `json:"delayed_replies,omitempty"`
	Stalls         int64 `json:"stalled_requests,omitempty"`
	// StressRounds is how many stress runs the claim waits were observed over.
	StressRounds int64 `json:"stress_rounds,omitempty"`
	// The lifecycle's: failures and renewals the queue accepted, jobs enqueued to run later,
	// business effects written (each in its completion's transaction, which may roll back).
	Failures  int64 `json:"failures,omitempty"`
	Renewals  int64 `json:"renewals,omitempty"`
	Scheduled int64 `json:"scheduled,omitempty"`
	Effects   int64 `json:"effects,omitempty"`
	// External effects: calls of a destination answered, calls retried after a lost reply, and
	// effects that stand at the destination beyond a job's first.
	Calls      int64 `json:"external_calls,omitempty"`
	Retries    int64 `json:"external_retries,omitempty"`
	Duplicates int64 `json:"external_duplicates,omitempty"`
	// Tallies counts the accepted answers of the operations a queue ships of its own beyond
	// these (model.Facts.Tally: "cancellations"), by name.
	Tallies map[string]int64 `json:"tallies,omitempty"`
}

func (c Counts) String() string {
	s := fmt.Sprintf("%d enqueued, %d claims (+%d empty), %d completions accepted, %d refused (%d with an older token), %d expiries, %d row locks, %d interrupts, %d terminations",
		c.Enqueued, c.Claims, c.EmptyClaims, c.Completions, c.RejectedCompletions, c.StaleTokenCompletion, c.Expiries, c.Locks, c.Interrupts, c.Terminates)
	if c.Ops > 0 {
		s = fmt.Sprintf("%d ops (%d unknown outcomes, %d snapshots): ", c.Ops, c.Unknown, c.Snapshots) + s
	}
	if c.TxnClaims > 0 {
		s += fmt.Sprintf(", %d claim transactions", c.TxnClaims)
	}
	if c.TimedClaims+c.RealPauses > 0 {
		s += fmt.Sprintf("; real time: %d claims with leases of their own length, %d pauses (%.1f s in all)",
			c.TimedClaims, c.RealPauses, float64(c.PausedMillis)/1000)
		if c.EdgeLandings > 0 {
			s += fmt.Sprintf(", %d statements landed just before a lease's end", c.EdgeLandings)
		}
	}
	if c.DroppedReplies+c.Cuts+c.Delays+c.Stalls > 0 {
		s += fmt.Sprintf("; proxy faults: %d dropped replies, %d cuts, %d delays, %d stalls", c.DroppedReplies, c.Cuts, c.Delays, c.Stalls)
	}
	if c.ClaimWaits > 0 {
		s += fmt.Sprintf("; observed %d claim(s) waiting behind an injected row lock", c.ClaimWaits)
	}
	if c.NotPromised > 0 {
		s += fmt.Sprintf("; not promised: %d observed", c.NotPromised)
	}
	if c.Failures+c.Renewals+c.Scheduled+c.Effects > 0 {
		s += fmt.Sprintf("; lifecycle: %d failures, %d renewals, %d scheduled, %d effects", c.Failures, c.Renewals, c.Scheduled, c.Effects)
	}
	if c.Calls > 0 {
		s += fmt.Sprintf("; external effects: %d calls (%d retried after a lost reply), %d duplicates", c.Calls, c.Retries, c.Duplicates)
	}
	for _, name := range slices.Sorted(maps.Keys(c.Tallies)) {
		s += fmt.Sprintf("; %d %s", c.Tallies[name], name)
	}
	return s
}

// Add accumulates o into c, field by field.
func (c *Counts) Add(o Counts) {
	cv, ov := reflect.ValueOf(c).Elem(), reflect.ValueOf(o)
	for i := range cv.NumField() {
		if f := cv.Field(i); f.Kind() == reflect.Int64 {
			f.SetInt(f.Int() + ov.Field(i).Int())
		}
	}
	c.addTallies(o.Tallies)
}

func (c *Counts) addTallies(t map[string]int64) {
	for name, n := range t {
		c.tally(name, n)
	}
}

// tally adds n to the named count of Tallies.
func (c *Counts) tally(name string, n int64) {
	if c.Tallies == nil {
		c.Tallies = map[string]int64{}
	}
	c.Tallies[name] += n
}

// Op counts what one recorded operation did, answered as out: as its kind's facts say
// (model.FactsOf), so that a history's counts and a sequential step's come from the one place.
// The harness's own doings (an expiry, a row lock taken or released) count as done; a claim
// asking a lease of its own length counts as timed once sent; everything else counts where
// its answer came back and says it took effect.
func (c *Counts) Op(in model.Input, out model.Output) {
	f := model.FactsOf(in, out)
	returned := out.Outcome == model.Returned
	for _, n := range []struct {
		n  *int64
		is bool
	}{
		{&c.Expiries, f.Expires},
		{&c.Locks, f.Locks},
		{&c.Releases, f.Unlocks},
		{&c.TimedClaims, f.Claims && TimedLease(f.Lease) && out.Outcome != model.NotSent},
		{&c.Enqueued, returned && f.Creates},
		{&c.Scheduled, returned && f.Creates && f.Later},
		{&c.Claims, returned && f.Took},
		{&c.EmptyClaims, returned && f.Claims && !f.Took},
		{&c.Completions, returned && f.Ends && f.Accepted},
		{&c.RejectedCompletions, returned && f.Ends && !f.Accepted},
		{&c.Failures, returned && f.Fails && f.Accepted},
		{&c.Renewals, returned && f.Renews && f.Accepted},
		{&c.Effects, returned && f.Effect},
	} {
		if n.is {
			*n.n++
		}
	}
	if returned && f.Accepted && f.Tally != "" {
		c.tally(f.Tally, 1)
	}
}

// Answers is what the queue answered during one operation, counted statement by statement
// (Count), and how long it paused.
type Answers struct {
	Counts
	Slept time.Duration // real time the operation paused for
}

// Observe counts one simple (not compound) operation.
func (c *Counts) Observe(op Op, a Answers, err error) {
	var v *model.Violation
	if errors.As(err, &v) && v.Property == model.PNoErrors {
		c.Errors++
	}
	c.TimedClaims += a.TimedClaims
	c.Failures, c.Renewals, c.Effects = c.Failures+a.Failures, c.Renewals+a.Renewals, c.Effects+a.Effects
	c.Scheduled, c.Enqueued = c.Scheduled+a.Scheduled, c.Enqueued+a.Scheduled
	c.Calls, c.Retries, c.Duplicates = c.Calls+a.Calls, c.Retries+a.Retries, c.Duplicates+a.Duplicates
	c.addTallies(a.Tallies)
	if a.Slept > 0 {
		c.RealPauses++
		c.PausedMillis += a.Slept.Milliseconds()
	}
	if o, ok := op.(counted); ok {
		o.count(c, a)
		return
	}
	c.claimsAndCompletions(a) // what its statements answered (a completion with its effect)
}

func (c *Counts) claimsAndCompletions(a Answers) {
	c.Claims += a.Claims
	c.EmptyClaims += a.EmptyClaims
	c.Completions += a.Completions
	c.RejectedCompletions += a.RejectedCompletions
}

// counted is an operation with a count of its own in Counts; any other counts the claims and
// completions its statements answered.
type counted interface {
	count(c *Counts, a Answers)
}

func (Enqueue) count(c *Counts, a Answers) { c.Enqueued += a.Enqueued }
func (o Complete) count(c *Counts, a Answers) {
	if o.Back > 0 {
		c.StaleTokenCompletion++
	}
	c.claimsAndCompletions(a)
}
func (ShortLease) count(c *Counts, a Answers)  { c.ShortLeases++; c.claimsAndCompletions(a) }
func (ClaimTxn) count(c *Counts, a Answers)    { c.TxnClaims++; c.claimsAndCompletions(a) }
func (Expire) count(c *Counts, _ Answers)      { c.Expiries++ }
func (ExpireClaim) count(c *Counts, _ Answers) { c.Expiries++ }
func (Pause) count(c *Counts, _ Answers)       { c.Pauses++ }
func (Lock) count(c *Counts, _ Answers)        { c.Locks++ }
func (Commit) count(c *Counts, _ Answers)      { c.Releases++ }
func (Rollback) count(c *Counts, _ Answers)    { c.Releases++ }
func (Interrupt) count(c *Counts, _ Answers)   { c.Releases++; c.Interrupts++ }
func (Terminate) count(c *Counts, _ Answers)   { c.Releases++; c.Terminates++ }
func (Crash) count(c *Counts, _ Answers)       { c.Crashes++ }

// A drain's own claims and completions are its mechanism, counted as the jobs it drained
// rather than as workers' claims.
func (Drain) count(c *Counts, a Answers) { c.Drains++; c.DrainedJobs += a.Completions }
