// Package effectdest holds the destination of a job's external effect: a small real HTTP
// server on loopback, started per run, that a worker calls between its claim and its
// completion (a payment, a message sent, a row written in another system). It applies an
// effect in one of three ways, which is what the suite's effect count is judged by:
//
//   - Every: each call applies, as a destination without fencing or idempotency does;
//   - Idempotent: at most once per idempotency key (the job's);
//   - Fenced: only for the highest fencing value (the claim's generation) seen for the job,
//     which supersedes the effect of any lower one; a lower value is refused.
//
// A call may carry one of the fault proxy's faults, which the destination carries out at the
// HTTP level: its reply dropped after the effect applied, the connection cut before anything
// applied, the reply delayed, the request stalled before it is read. The client half (Send,
// Read) is what the suite's statements call.
package effectdest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/faultproxy"
)

// Mode is how the destination applies effects.
type Mode string

const (
	Every      Mode = "every"      // each call applies
	Idempotent Mode = "idempotent" // at most once per idempotency key
	Fenced     Mode = "fenced"     // only the highest fencing value seen per job stands
)

// Modes is every mode, the non-fencing one first.
var Modes = []Mode{Every, Idempotent, Fenced}

// Fences reports whether the destination promises one effect per job, however often a job's
// workers call it.
func (m Mode) Fences() bool { return m == Idempotent || m == Fenced }

// Outcome is what the destination did with one call.
type Outcome string

const (
	Applied   Outcome = "applied"   // the effect applied (under Fenced, superseding a lower fence's)
	Duplicate Outcome = "duplicate" // the key or the fence was seen: nothing applied again
	Stale     Outcome = "stale"     // a higher fence was seen: refused
)

// Call is one call of a job's effect: the job, its fencing value (the claim's generation), its
// idempotency key, and a fault for the destination to carry out on this call.
type Call struct {
	Job   int64            `json:"job"`
	Fence int64            `json:"fence"`
	Key   string           `json:"key"`
	Fault faultproxy.Fault `json:"fault,omitzero"`
}

// KeyOf is the idempotency key a worker sends with a job's effect: the job is the unit of work,
// whichever attempt calls.
func KeyOf(job int64) string { return fmt.Sprintf("job-%d", job) }

// Answer is the destination's reply to a call: the outcome, the job's counts after it, and
// the destination's mode, so that the caller judges the counts by what the destination promises.
type Answer struct {
	Outcome Outcome `json:"outcome"`
	Mode    Mode    `json:"mode"`
	Count   Count   `json:"count"`
}

// Count is what the destination holds of one job.
type Count struct {
	Job     int64 `json:"job"`
	Calls   int   `json:"calls"`    // calls that reached it
	Applied int   `json:"applied"`  // calls it applied
	InForce int   `json:"in_force"` // effects that stand: each applied one, or under Fenced the highest fence's alone
	Fence   int64 `json:"fence"`    // the highest fencing value applied
}

// Duplicates is how many of the job's effects stand beyond the first.
func (c Count) Duplicates() int { return max(c.InForce-1, 0) }

// Counts is every job the destination heard of, in job order, and its mode.
type Counts struct {
	Mode Mode    `json:"mode"`
	Jobs []Count `json:"jobs"`
}

// Dest is a running destination.
type Dest struct {
	mode Mode
	ln   net.Listener
	srv  *http.Server
	done chan struct{}

	mu   sync.Mutex
	jobs map[int64]*Count
	keys map[string]bool
}

// Start starts a destination of the given mode on an ephemeral loopback port.
func Start(mode Mode) (*Dest, error) {
	if !slices.Contains(Modes, mode) {
		return nil, fmt.Errorf("effectdest: no mode %q (want one of %v)", mode, Modes)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("effectdest: %w", err)
	}
	d := &Dest{mode: mode, ln: ln, done: make(chan struct{}), jobs: map[int64]*Count{}, keys: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /effects", d.call)
	mux.HandleFunc("GET /effects", d.counts)
	d.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(d.done)
		_ = d.srv.Serve(ln)
	}()
	return d, nil
}

// URL is where the destination listens.
func (d *Dest) URL() string { return "http://" + d.ln.Addr().String() + "/effects" }

// Mode is how the destination applies effects.
func (d *Dest) Mode() Mode { return d.mode }

// Close stops the destination and waits for its server to end.
func (d *Dest) Close() error {
	err := d.srv.Close()
	<-d.done
	return err
}

// Reset forgets every effect, as a fresh run starts.
func (d *Dest) Reset() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.jobs, d.keys = map[int64]*Count{}, map[string]bool{}
}

// Counts is what the destination holds now.
func (d *Dest) Counts() Counts {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := Counts{Mode: d.mode}
	for _, c := range d.jobs {
		out.Jobs = append(out.Jobs, *c)
	}
	slices.SortFunc(out.Jobs, func(a, b Count) int { return int(a.Job - b.Job) })
	return out
}

// apply applies one call by the destination's mode.
func (d *Dest) apply(c Call) Answer {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := d.jobs[c.Job]
	if n == nil {
		n = &Count{Job: c.Job}
		d.jobs[c.Job] = n
	}
	n.Calls++
	out := Applied
	switch d.mode {
	case Every:
		n.InForce++
	case Idempotent:
		if d.keys[c.Key] {
			out = Duplicate
			break
		}
		d.keys[c.Key] = true
		n.InForce++
	case Fenced:
		switch {
		case n.Applied > 0 && c.Fence < n.Fence:
			out = Stale
		case n.Applied > 0 && c.Fence == n.Fence:
			out = Duplicate
		default:
			n.InForce = 1 // the higher fence's effect replaces the lower one's
		}
	}
	if out == Applied {
		n.Applied++
		n.Fence = max(n.Fence, c.Fence)
	}
	return Answer{Outcome: out, Mode: d.mode, Count: *n}
}

func (d *Dest) call(w http.ResponseWriter, r *http.Request) {
	var c Call
	if err := json.NewDecoder(r.Body).Decode(&c); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	switch c.Fault.Kind {
	case faultproxy.Cut:
		hangUp(w) // nothing applied
		return
	case faultproxy.Stall:
		time.Sleep(c.Fault.For)
	}
	a := d.apply(c)
	switch c.Fault.Kind {
	case faultproxy.DropReply:
		hangUp(w) // applied, and the caller never learns it
		return
	case faultproxy.DelayReply:
		time.Sleep(c.Fault.For)
	}
	if a.Outcome == Stale {
		w.WriteHeader(http.StatusConflict)
	}
	_ = json.NewEncoder(w).Encode(a)
}

func (d *Dest) counts(w http.ResponseWriter, _ *http.Request) {
	_ = json.NewEncoder(w).Encode(d.Counts())
}

// hangUp closes the connection without a reply.
func hangUp(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// client sends no call twice on its own: a lost reply is the worker's to retry or not.
var client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}

// ErrLost is a call whose reply never came: it may or may not have applied.
var ErrLost = errors.New("effectdest: the reply was lost")

// Send calls a job's effect at the destination at url.
func Send(ctx context.Context, url string, c Call) (Answer, error) {
	body, err := json.Marshal(c)
	if err != nil {
		return Answer{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return Answer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return Answer{}, ctx.Err()
		}
		return Answer{}, fmt.Errorf("%w: %v", ErrLost, err)
	}
	defer resp.Body.Close()
	var a Answer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		return Answer{}, fmt.Errorf("effectdest: %s: %w", resp.Status, err)
	}
	return a, nil
}

// Read reads every job's counts from the destination at url.
func Read(ctx context.Context, url string) (Counts, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Counts{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return Counts{}, fmt.Errorf("effectdest: %w", err)
	}
	defer resp.Body.Close()
	var c Counts
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		return Counts{}, fmt.Errorf("effectdest: %s: %w", resp.Status, err)
	}
	return c, nil
}
