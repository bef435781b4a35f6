package linear

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"pgqcheck/sut"
)

// token is what a claim hands a worker.
type token struct{ id, gen int64 }

// run is the state a stress run's goroutines share.
type run struct {
	ctx context.Context
	in  *sut.Installed
	cfg StressConfig
	rec *Recorder

	stop atomic.Bool

	workers []*worker

	mu      sync.Mutex
	known   []int64        // ids whose enqueue returned, in order
	claimed map[int64]bool // ids some claim returned
	recent  []token        // the last claims, for the chaos goroutine to aim at
}

func (r *run) stopped() bool { return r.stop.Load() || r.ctx.Err() != nil }

func (r *run) noteEnqueued(id int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.known = append(r.known, id)
}

func (r *run) noteClaim(t token) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.claimed[t.id] = true
	r.recent = append(r.recent, t)
	if len(r.recent) > 32 {
		r.recent = r.recent[len(r.recent)-32:]
	}
}

// backlog is how many enqueued jobs no claim has returned yet.
func (r *run) backlog() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.known) - len(r.claimed)
}

func (r *run) knownIDs() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int64(nil), r.known...)
}

// unclaimed returns the lowest enqueued job no claim has returned (a ready job, which a
// claim must skip while a locker holds it), or 0.
func (r *run) unclaimed() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range r.known {
		if !r.claimed[id] {
			return id
		}
	}
	return 0
}

func (r *run) recentClaim(rng *rand.Rand) (token, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.recent) == 0 {
		return token{}, false
	}
	return r.recent[rng.IntN(len(r.recent))], true
}

// worker claims, pauses, completes and sometimes crashes. While it pauses holding a token it
// publishes it, so the chaos goroutine can expire that job and let another worker reclaim it:
// the paused worker then presents a stale generation, which the queue must refuse.
type worker struct {
	c      *Client
	rng    *rand.Rand
	tokens []token // newest last; older ones are what a restarted worker might still present
	paused atomic.Pointer[token]
}

func (r *run) work(w *worker) {
	ctx := r.ctx
	for !r.stopped() {
		out, err := w.c.Claim(ctx, r.cfg.Lease, false)
		if err != nil {
			r.backoff(w.rng)
			continue
		}
		if !out.Found {
			if len(w.tokens) > 0 && w.rng.IntN(4) == 0 {
				r.complete(w, w.tokens[w.rng.IntN(len(w.tokens))])
			}
			r.backoff(w.rng)
			continue
		}
		t := token{out.Job, out.Gen}
		w.tokens = append(w.tokens, t)
		if len(w.tokens) > 4 {
			w.tokens = w.tokens[1:]
		}
		r.noteClaim(t)
		if d := r.pause(w.rng); d > 0 {
			w.paused.Store(&t)
			time.Sleep(d)
			w.paused.Store(nil)
		}
		switch x := w.rng.IntN(100); {
		case x < 85:
			r.complete(w, t)
		case x < 90: // crash: forget every token; the jobs wait for an expiry or the drain
			w.tokens = nil
		case x < 97: // a restarted worker presenting an older token
			r.complete(w, w.tokens[w.rng.IntN(len(w.tokens))])
		}
	}
}

func (r *run) complete(w *worker, t token) {
	_, _ = w.c.Complete(r.ctx, t.id, t.gen)
}

// pause is how long a worker holds a claimed job before completing it: mostly not at all, and
// now and then long enough for the chaos goroutine to expire the job and another worker to
// reclaim it.
func (r *run) pause(rng *rand.Rand) time.Duration {
	switch x := rng.IntN(100); {
	case x < 60:
		return 0
	case x < 90:
		return time.Duration(100+rng.IntN(1900)) * time.Microsecond
	}
	return time.Duration(5+rng.IntN(25)) * time.Millisecond
}

func (r *run) backoff(rng *rand.Rand) {
	time.Sleep(time.Duration(200+rng.IntN(300)) * time.Microsecond)
}

// enqueue keeps a small backlog of ready jobs, each with a payload of its own, until the run
// has enqueued MaxJobs.
func (r *run) enqueue(c *Client) {
	n := 0
	for !r.stopped() && n < r.cfg.MaxJobs {
		if r.backlog() >= r.cfg.Backlog {
			time.Sleep(200 * time.Microsecond)
			continue
		}
		n++
		out, err := c.Enqueue(r.ctx, fmt.Sprintf(`{"n":%d}`, n))
		if err == nil {
			r.noteEnqueued(out.Job)
		}
	}
}
