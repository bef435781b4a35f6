package linear

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"pgqcheck/program"
	"pgqcheck/sut"
)

// Stress traffic's mix, as configuration (weights are relative): what a worker does with a job
// it claimed ("keep" holds the token and claims again); what the chaos goroutine does each
// turn ("rest" does nothing); how the chaos locker's transaction ends.
var (
	AfterClaimWeights = program.Weights{"complete": 85, "crash": 5, "complete older": 7, "keep": 3}
	ChaosWeights      = program.Weights{"expire": 450, "lock": 150, "cancel": 20, "terminate": 5, "snapshot": 10, "rest": 365}
	ReleaseWeights    = program.Weights{"commit": 40, "rollback": 30, "cancel": 15, "terminate": 15}
)

// draw picks a kind from weights.
func draw(rng *rand.Rand, w program.Weights) string { return w.At(rng.IntN(w.Total())) }

// token is what a claim hands a worker.
type token = program.Token

// actor is one goroutine of a stress run: a recording client and the world its operations
// resolve against (its own session's tokens and transaction). Stress traffic runs the program
// package's operations, as the other modes do.
type actor struct {
	c      *Client
	w      *program.World
	s      *program.Session
	strict bool // its claims run alone (the drain)
}

func newActor(c *Client, q *sut.Queue) *actor {
	w := program.NewWorld(q, c.Name)
	w.Clock = c.clock()
	return &actor{c: c, w: w, s: w.Sessions[0]}
}

func (a *actor) World() *program.World { return a.w }

// Do runs a step's statements on the actor's client, one after another.
func (a *actor) Do(ctx context.Context, op program.Step) ([]program.Result, error) {
	var out []program.Result
	for _, st := range op.Stmts(a.w) {
		f := &Flight{Stmt: st, Strict: a.strict && st.Kind == program.KClaim}
		if st.Kind == program.KSnapshot {
			f.Known = a.w.Jobs
		}
		r, _, err := a.c.Do(ctx, f)
		if err != nil {
			return out, err
		}
		a.w.Apply(a.s, st, r, f.At)
		out = append(out, r)
	}
	return out, nil
}

func (a *actor) Sleep(ctx context.Context, d time.Duration) error {
	time.Sleep(d)
	return nil
}

// one runs a step and returns its single statement's result.
func (a *actor) one(ctx context.Context, op program.Step) program.Result {
	rs, err := a.Do(ctx, op)
	if err != nil || len(rs) == 0 {
		return program.Result{Err: err}
	}
	return rs[len(rs)-1]
}

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
	r.claimed[t.ID] = true
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
	*actor
	rng    *rand.Rand
	paused atomic.Pointer[token]
}

func (r *run) work(w *worker) {
	ctx := r.ctx
	name := w.c.Name
	for !r.stopped() {
		res := w.one(ctx, program.Claim{S: name, Lease: r.cfg.Lease})
		if res.Err != nil {
			r.backoff(w.rng)
			continue
		}
		// Older tokens are what a restarted worker might still present; four are enough.
		if n := len(w.s.Tokens); n > 4 {
			w.s.Tokens = w.s.Tokens[n-4:]
		}
		if !res.Out.Found {
			if n := len(w.s.Tokens); n > 0 && w.rng.IntN(4) == 0 {
				w.one(ctx, program.Complete{S: name, Back: w.rng.IntN(n)})
			}
			r.backoff(w.rng)
			continue
		}
		t := token{ID: res.Out.Job, Gen: res.Out.Gen}
		r.noteClaim(t)
		if d := r.pause(w.rng); d > 0 {
			w.paused.Store(&t)
			time.Sleep(d)
			w.paused.Store(nil)
		}
		switch draw(w.rng, AfterClaimWeights) {
		case "complete":
			w.one(ctx, program.Complete{S: name})
		case "crash": // forget every token; the jobs wait for an expiry or the drain
			w.Do(ctx, program.Crash{W: name})
		case "complete older": // a restarted worker presenting an older token
			w.one(ctx, program.Complete{S: name, Back: w.rng.IntN(len(w.s.Tokens))})
		}
	}
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
func (r *run) enqueue(a *actor) {
	for n := 0; !r.stopped() && n < r.cfg.MaxJobs; {
		if r.backlog() >= r.cfg.Backlog {
			time.Sleep(200 * time.Microsecond)
			continue
		}
		n++
		if res := a.one(r.ctx, program.Enqueue{S: a.c.Name, N: 1}); res.Err == nil {
			r.noteEnqueued(res.Out.Job)
		}
	}
}
