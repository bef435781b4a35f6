package record

import (
	"sync"

	"github.com/pgqcheck/pgqcheck/internal/faultproxy"
	"github.com/pgqcheck/pgqcheck/sut"
)

// Network faults: a client may connect through the fault proxy, which then drops, delays, cuts
// or stalls the next statement it is told to. A dropped reply or a cut connection leaves the
// statement's outcome unknown, and the client records it so (it returns at Never: possibly
// applied), exactly as any statement whose connection died after it was sent; a delay or a
// stall only makes the answer late, and the answer, when it comes, is recorded as it is.

// sessionOptions are the client's options for its next connection. A proxied client's
// connection is the link dialed while connecting (opened is called once it is up); pgx dials
// again later for each cancel request it sends, and those links carry no session.
func (c *Client) sessionOptions() (o sut.SessionOptions, opened func()) {
	o = c.opts
	if c.proxy == nil {
		return o, func() {}
	}
	var mu sync.Mutex
	var last *faultproxy.Link
	done := false
	o.Dial = c.proxy.DialFunc(func(l *faultproxy.Link) {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			last = l
		}
	})
	return o, func() {
		mu.Lock()
		defer mu.Unlock()
		done = true
		c.link.Store(last)
	}
}

// Proxied reports whether the client's connections go through the fault proxy.
func (c *Client) Proxied() bool { return c.proxy != nil }

// faultArmed reports whether a fault is armed on the current connection and not yet hit.
func (c *Client) faultArmed() bool {
	l := c.link.Load()
	return l != nil && l.Armed()
}

// Inject arms f for the next statement the client sends on its current connection. When it
// hits, it is recorded in the history's faults, on the session's current life. It reports
// false when the client is not proxied or has no connection.
func (c *Client) Inject(f faultproxy.Fault) bool {
	l := c.link.Load()
	if l == nil || !c.Connected() {
		return false
	}
	target := c.Label()
	l.Arm(f, func() {
		if c.rec != nil {
			c.rec.Fault(string(f.Kind), target)
		}
	})
	return true
}

// Disarm drops a fault armed and not yet hit on the client's connection.
func (c *Client) Disarm() {
	if l := c.link.Load(); l != nil {
		l.Disarm()
	}
}
