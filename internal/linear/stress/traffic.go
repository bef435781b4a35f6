package stress

import (
	"context"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/faultproxy"
	"github.com/pgqcheck/pgqcheck/internal/generate"
	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/internal/linear/record"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/program/external"
	"github.com/pgqcheck/pgqcheck/internal/program/lifecycle"
	"github.com/pgqcheck/pgqcheck/sut"
)

// drawKind picks a kind from weights.
func drawKind(rng *rand.Rand, w generate.Weights) string { return w.At(rng.IntN(w.Total())) }

// actor is one goroutine of a stress run: a recording client and the world its operations
// resolve against (its own session's tokens and transaction). Stress traffic runs the program
// package's operations, as the other modes do.
type actor struct {
	client  *record.Client
	world   *program.World
	session *program.Session
	strict  bool // its claims run alone (the drain)
	// halt cuts its pauses short when the run stops (nil: never).
	halt <-chan struct{}
	// The real-time pauses its procedures made and how long they lasted.
	pauses int
	slept  time.Duration
}

func newActor(c *record.Client, q *sut.Queue) *actor {
	w := program.NewWorld(q, c.Name)
	w.Clock = c.Clock()
	return &actor{client: c, world: w, session: w.Sessions[0]}
}

func (a *actor) World() *program.World { return a.world }

// Do runs a step's statements on the actor's client, one after another.
func (a *actor) Do(ctx context.Context, op program.Step) ([]program.Result, error) {
	var out []program.Result
	for _, st := range op.Stmts(a.world) {
		if a.strict {
			st, _ = program.Strictly(st)
		}
		f := &record.Flight{Stmt: st}
		r, _, err := a.client.Do(ctx, f)
		if err != nil {
			return out, err
		}
		a.world.Apply(a.session, st, r, f.At)
		a.client.SyncHolding(a.session)
		out = append(out, r)
	}
	return out, nil
}

func (a *actor) Sleep(ctx context.Context, d time.Duration) error {
	start := time.Now()
	// Cut short when the run is over: a pause past its end would only make it longer.
	if err := program.Wait(ctx, d, a.halt); err != nil {
		return err
	}
	a.pauses++
	a.slept += time.Since(start)
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
	cfg Config
	rec *history.Recorder

	// What the run opened, closed when it ends.
	clients []*record.Client
	proxy   *faultproxy.Proxy // every worker connects through it, for the chaos's proxy faults

	stop atomic.Bool
	halt chan struct{} // closed when the traffic stops
	// chaosTurn: each chaos turn holds it for reading; a crash round takes it while the server
	// restarts and the admin connection is replaced.
	chaosTurn sync.RWMutex
	// claimGate: each worker's claim holds it for reading; the crash probe takes it to enqueue
	// and claim a job that no worker can take between the two.
	claimGate sync.RWMutex

	workers  []*worker
	enqueuer *actor
	enqRng   *rand.Rand // whether the enqueuer's next job is due later
	chaos    *chaos     // nil: a run without faults
	rescuer  *rescuer

	mu      sync.Mutex
	known   []int64         // ids whose enqueue returned, in order
	strays  []int64         // ids a claim or snapshot showed that no returned enqueue created
	seen    map[int64]bool  // known and strays
	claimed map[int64]bool  // ids some claim returned
	recent  []program.Token // the last claims, for the chaos goroutine to aim at
}

func (r *run) stopped() bool { return r.stop.Load() || r.ctx.Err() != nil }

func (r *run) noteEnqueued(id int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.known = append(r.known, id)
	r.seenLocked()[id] = true
}

func (r *run) seenLocked() map[int64]bool {
	if r.seen == nil {
		r.seen = map[int64]bool{}
	}
	return r.seen
}

func (r *run) noteClaim(t program.Token) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sawLocked(t.ID)
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

// tableIDs is every job the drain must expire: those whose enqueue returned, and every other
// row the queue holds (an enqueue whose answer was lost may have created one), read with an
// unrecorded snapshot on c, which nothing else uses any more.
func (r *run) tableIDs(ctx context.Context, c *record.Client) ([]int64, error) {
	rows, _, err := c.Session().Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	ids := r.knownIDs()
	seen := map[int64]bool{}
	for _, id := range ids {
		seen[id] = true
	}
	for _, row := range rows {
		if !seen[row.ID] {
			ids = append(ids, row.ID)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
}

// knownIDs is every job the run knows exists: those whose enqueue returned, then the strays
// (made by an enqueue whose answer was lost) a claim or a snapshot has shown since. A snapshot
// that lacks one of them says something of it.
func (r *run) knownIDs() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append(append([]int64(nil), r.known...), r.strays...)
}

// saw notes a job an answer showed.
func (r *run) saw(id int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sawLocked(id)
}

func (r *run) sawLocked(id int64) {
	if seen := r.seenLocked(); !seen[id] {
		seen[id] = true
		r.strays = append(r.strays, id)
	}
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

func (r *run) recentClaim(rng *rand.Rand) (program.Token, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.recent) == 0 {
		return program.Token{}, false
	}
	return r.recent[rng.IntN(len(r.recent))], true
}

// worker claims, pauses, completes and sometimes crashes. While it pauses holding a token it
// publishes it, so the chaos goroutine can expire that job and let another worker reclaim it:
// the paused worker then presents a stale generation, which the queue must refuse. A token with
// a timed lease is left to time: the worker may wait until just past its end, and another
// worker reclaim the job because the lease ran out.
type worker struct {
	*actor
	rng    *rand.Rand
	paused atomic.Pointer[program.Token]
	// txnClaims are the claim transactions it kept open across a lease's edge.
	txnClaims int
	// calls of the run's destination answered, and of them sent again after a lost reply.
	calls, callRetries int
}

func (r *run) work(w *worker) {
	ctx := r.ctx
	name := w.client.Name
	for !r.stopped() {
		if w.session.HoldsClaimTxn {
			// A worker of a queue whose claims hold a transaction works one job at a time: the
			// one it holds (after presenting an older token) is completed first.
			w.one(ctx, program.Complete{S: name})
		}
		lease := r.cfg.Lease
		if drawKind(w.rng, generate.LeaseWeights) == "timed" {
			lease = generate.TimedLeases[w.rng.IntN(len(generate.TimedLeases))]
		}
		r.claimGate.RLock()
		if lease != r.cfg.Lease && w.acrossEdge(ctx, lease) {
			r.claimGate.RUnlock()
			continue
		}
		res := w.one(ctx, program.Claim{S: name, Lease: lease})
		r.claimGate.RUnlock()
		if res.Err != nil {
			r.backoff(w.rng)
			continue
		}
		// Older tokens are what a restarted worker might still present; four are enough.
		if n := len(w.session.Tokens); n > 4 {
			w.session.Tokens = w.session.Tokens[n-4:]
		}
		if !res.Out.Found {
			if n := len(w.session.Tokens); n > 0 && w.rng.IntN(4) == 0 {
				w.one(ctx, program.Complete{S: name, Back: w.rng.IntN(n)})
			}
			r.backoff(w.rng)
			continue
		}
		t := w.session.Tokens[len(w.session.Tokens)-1]
		r.noteClaim(t)
		if hold := w.hold(lease != r.cfg.Lease); hold != nil {
			w.paused.Store(&t)
			if err := hold.Run(ctx, w); err != nil {
				return
			}
			w.paused.Store(nil)
		} else if d := r.pause(w.rng); d > 0 {
			w.paused.Store(&t)
			time.Sleep(d)
			w.paused.Store(nil)
		}
		if w.lifecycle(ctx) {
			continue
		}
		switch drawKind(w.rng, generate.AfterClaimWeights) {
		case "complete":
			w.callEffect(ctx, 0)
			w.one(ctx, program.Complete{S: name})
		case "crash": // forget every token; the jobs wait for an expiry or the drain
			w.Do(ctx, program.Crash{W: name})
			if w.world.TxBound {
				// A worker whose claims hold its transaction dies with its connection.
				_ = w.client.Crash(ctx)
				w.session.HoldsClaimTxn = false
			}
		case "complete older": // a restarted worker presenting an older token
			back := w.rng.IntN(len(w.session.Tokens))
			w.callEffect(ctx, back)
			w.one(ctx, program.Complete{S: name, Back: back})
		}
	}
}

// callEffect calls the run's destination, where it has one, with the external effect of the
// worker's token back places before its newest, the call faulted as generate.CallFaultWeights
// draws.
func (w *worker) callEffect(ctx context.Context, back int) {
	call := external.Call{S: w.client.Name, Back: back}
	if !call.Applicable(w.world) {
		return
	}
	switch k := faultproxy.Kind(drawKind(w.rng, generate.CallFaultWeights)); k {
	case faultproxy.DropReply, faultproxy.Cut:
		call.Fault = faultproxy.Fault{Kind: k}
	case faultproxy.DelayReply:
		call.Fault = faultproxy.Fault{Kind: k, For: generate.ScheduledHolds[w.rng.IntN(len(generate.ScheduledHolds))]}
	}
	if rs, err := w.Do(ctx, call); err == nil && len(rs) == 1 && rs[0].Err == nil {
		w.calls++
		if rs[0].Out.Rows > 1 {
			w.callRetries++
		}
	}
}

// lifecycle draws what the worker does with the job it claimed beyond the seed's completion,
// where the queue ships it (generate.LifeWeights): renews its lease and goes on, or fails the
// job or completes it with its business effect instead. It reports whether the job is done
// with.
func (w *worker) lifecycle(ctx context.Context) bool {
	name := w.client.Name
	switch drawKind(w.rng, generate.LifeWeights) {
	case "renew":
		var op program.Step = lifecycle.Renew{S: name}
		if w.world.Life.WorkerLease {
			op = lifecycle.Heartbeat{S: name}
		}
		if op.Applicable(w.world) {
			w.Do(ctx, op)
		}
	case "fail":
		if op := (lifecycle.Fail{S: name, Final: w.rng.IntN(4) == 0}); op.Applicable(w.world) {
			w.Do(ctx, op)
			return true
		}
	case "effect":
		if op := (lifecycle.WithEffect{S: name}); op.Applicable(w.world) {
			w.transaction(ctx, op)
			return true
		}
	}
	return false
}

// transaction runs a transaction operation's parts one after another, rolling back where one
// fails.
func (w *worker) transaction(ctx context.Context, txn program.Compound) {
	for _, part := range txn.Parts() {
		if !part.Applicable(w.world) {
			continue
		}
		var err error
		switch p := part.(type) {
		case program.Procedure:
			err = p.Run(ctx, w)
		case program.Step:
			_, err = w.Do(ctx, p)
		}
		if err != nil {
			if w.session.InTxn {
				_, _ = w.Do(ctx, program.Rollback{S: w.client.Name})
			}
			return
		}
	}
}

// acrossEdge runs, now and then, a transaction that stays open across the edge of a timed lease
// the worker takes: a claim whose transaction waits to just past that lease's end before
// completing, or a claim transaction that began before the worker's own claim lapsed and
// claims after. A predicate on now() (the transaction's start) where it means the clock accepts
// the late completion, or misses the lapsed job. It reports whether it ran one.
func (w *worker) acrossEdge(ctx context.Context, lease time.Duration) bool {
	name := w.client.Name
	var txn program.ClaimTxn
	switch drawKind(w.rng, generate.EdgeTxnWeights) {
	case "complete across its end":
		txn = program.ClaimTxn{S: name, Lease: lease, HoldEdge: true, Complete: true, Commit: true}
	case "claim across its end":
		txn = program.ClaimTxn{S: name, WaitEdge: name, Complete: true, Commit: true}
		if !txn.Applicable(w.world) {
			return false
		}
		if res := w.one(ctx, program.Claim{S: name, Lease: lease}); res.Err != nil || !res.Out.Found {
			return true
		}
	default:
		return false
	}
	if !txn.Applicable(w.world) {
		return false
	}
	w.txnClaims++
	w.transaction(ctx, txn)
	return true
}

// hold is how a worker that claimed with a timed lease waits before it goes on, in real time:
// until the edge of that lease, where its completion and other workers' claims land, or a
// plain pause. Nil: it goes on as after any claim.
func (w *worker) hold(timed bool) program.Procedure {
	if !timed {
		return nil
	}
	margin := generate.NearMargins[w.rng.IntN(len(generate.NearMargins))]
	switch drawKind(w.rng, generate.TimedHoldWeights) {
	case "until before its end":
		return program.Near{W: w.client.Name, Margin: margin}
	case "until after its end":
		return program.Near{W: w.client.Name, Margin: margin, After: true}
	case "pause":
		return program.Sleep{D: generate.RealPauses[w.rng.IntN(len(generate.RealPauses))]}
	}
	return nil
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
		var op program.Step = program.Enqueue{S: a.client.Name, N: 1}
		if later := (lifecycle.Later{S: a.client.Name, Delay: generate.LaterDelays[r.enqRng.IntN(len(generate.LaterDelays))]}); drawKind(r.enqRng, generate.EnqueueWeights) == "later" && later.Applicable(a.world) {
			op = later
		}
		if res := a.one(r.ctx, op); res.Err == nil {
			r.noteEnqueued(res.Out.Job)
		}
	}
}
