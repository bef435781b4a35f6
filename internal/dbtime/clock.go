// Package dbtime turns the clock readings a statement's session took around it into database
// time as the model counts it: offsets from the first reading of a run, shared by every session
// of a concurrent run, with the latest reading kept so that a statement sent later is known to
// have run no earlier.
package dbtime

import (
	"sync"
	"time"

	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// Clock turns a statement's clock readings into database time as the model counts it:
// offsets from the first reading of a run. It is safe for concurrent use, so that every
// session of a concurrent run shares one origin.
type Clock struct {
	mu     sync.Mutex
	origin time.Time
	latest time.Duration // the latest reading so far
	seen   time.Time     // when (on this machine's clock) that reading came back
}

// Reset starts a new run: the next reading is the new origin.
func (c *Clock) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.origin, c.latest, c.seen = time.Time{}, 0, time.Time{}
}

// Latest is the latest database time read so far: a statement sent after it returned ran
// no earlier.
func (c *Clock) Latest() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.latest
}

// Estimate guesses the database time now from the latest reading and the time since. It
// decides how long to pause; nothing is judged by it.
func (c *Clock) Estimate() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen.IsZero() {
		return c.latest
	}
	return c.latest + time.Since(c.seen)
}

// Window is the span of database time a statement ran in. A missing first reading (the
// answer was lost, or the transaction had already failed) is bounded by floor, the latest
// reading before the statement was sent; a missing last one by nothing: the statement may
// have taken effect at any later time.
func (c *Clock) Window(r sut.Clock, floor time.Duration) model.Window {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.origin.IsZero() && !r.From.IsZero() {
		c.origin = r.From
	}
	at := model.Window{From: floor, To: model.Never}
	if !r.From.IsZero() {
		at.From = r.From.Sub(c.origin)
	}
	// Before the origin's reading a last reading has nothing to count from (from the zero time
	// it would saturate to Never): the window stays open, as if it were lost.
	if !r.To.IsZero() && !c.origin.IsZero() {
		at.To = r.To.Sub(c.origin)
		if at.To > c.latest {
			c.latest, c.seen = at.To, time.Now()
		}
	}
	return at
}
