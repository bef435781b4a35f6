// Package neoq judges neoq (github.com/acaloiaro/neoq), its postgres backend, through its own
// public API: Enqueue on a backend, and a claim that is a handler invoked.
//
// What neoq v0.72.2 promises (README, the postgres backend's doc comments): jobs are
// deduplicated by a fingerprint of queue and payload among jobs not yet processed; a job is
// fetched with a row lock (FOR UPDATE SKIP LOCKED) in a transaction that stays open while its
// handler runs, and its status is written in that transaction, so no two workers run a job at
// once and a worker whose connection is lost changes nothing: its job "will be processed at
// least one more time" (updateJob's doc); a handler's error retries the job after a backoff
// (retries⁴ + 15 + random(30)·retries + 1 seconds) up to MaxRetries, then moves it to the dead
// jobs; jobs run by notification and an interval's poll of pending jobs, in no promised order;
// a job with RunAfter is "elligible to be picked up" only after it. Declared: fencing (only
// the transaction that holds the row writes its status), claims in any order, processed rows
// kept.
//
// neoq has no claim call: a backend LISTENs, polls for pending jobs every
// PendingJobCheckInterval and announces each, and its worker goroutine fetches an announced
// job by id, locks it and calls the handler with it. So each claim is a backend of its own,
// with one handler of concurrency 1, and returns the first job the handler is called with; the
// handler then waits for the suite's Complete (it returns nil, neoq commits) or Expire (the
// backend holding the claim's transaction is terminated). neoq never answers "nothing": a
// claim answers not-found only when the adapter's own read, inside the call, finds every due
// unprocessed job held by a live claim, and no job was handed over before that.
//
// A handler invocation after the first is a stale announcement reaching a backend whose
// claim has been decided: it waits until the backend's context is cancelled and returns, so
// neoq's status update fails and its transaction rolls back. Its lock lasts until then; the
// adapter's reads never take row locks and count a job no live claim holds as claimable, so
// such a lock only makes another claim wait for neoq's next announcement. So neoq's logger
// (SetLogger) is not used to hold the worker back from a second fetch by blocking the debug
// line every connection acquire logs: the pending-job poller logs it too, and a poller held
// there when the backend stops finds its acquire failing and loops on its ticker (see quiet).
//
// Configuration a neoq user chooses, as the adapter does: WithTransactionTimeout(0) and a
// handler JobTimeout of a day (neoq's defaults, 30 s each, would end or fail a claim the suite
// holds longer), WithPendingJobCheckInterval(25 ms) (the default 60 s is the last resort
// neoq's docs describe), one queue. Name enqueues jobs without MaxRetries, and its claims do
// not fail: neoq's backoff waits 16 s after a job's first failure and a random time after each
// later one, and a handler has no failure for good, none of which the model's lifecycle
// expresses. NoRetriesName enqueues every job with MaxRetries 0, where every failure is the
// job's last and no backoff is waited: its claims fail (the handler returns an error).
package neoq

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acaloiaro/neoq"
	"github.com/acaloiaro/neoq/backends/postgres"
	"github.com/acaloiaro/neoq/handler"
	"github.com/acaloiaro/neoq/jobs"
	"github.com/acaloiaro/neoq/logging"
	"github.com/jackc/pgx/v5"

	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// Version is the neoq release judged, the one go.mod pins.
const Version = "v0.72.2"

// Name is the queue's registered name.
const Name = "neoq-" + Version

// NoRetriesName is neoq with every job enqueued with MaxRetries 0, the setting of a user whose
// jobs must not run twice: the one configuration whose failures the model can judge (see
// NoRetriesPromises).
const NoRetriesName = Name + "-maxretries0"

func init() {
	sut.Register(sut.GoDef{Name: Name, New: func() sut.GoQueue { return &Queue{} }, Declared: Promises})
	sut.Register(sut.GoDef{Name: NoRetriesName, New: func() sut.GoQueue { return failing{&Queue{noRetries: true}} }, Declared: NoRetriesPromises})
}

// Promises is what neoq declares, as the model judges it (see the package doc). The lease is
// the claim's transaction on neoq's own connection, which nothing ends but the completion or
// its backend's end: a fixed long lease, ended by Expire. Not TxBound: that form watches the
// session's own transaction, and neoq's is on a connection of its own. OwnsTransactions: neoq's
// worker opens its transaction itself, never inside a caller's.
var Promises = sut.Declared{Order: model.Any, FixedLease: time.Hour, OwnsTransactions: true}

// NoRetriesPromises is what neoq declares for jobs with MaxRetries 0: a handler's error ends
// the job's only attempt, which moves it to the dead jobs with the error kept (updateJob),
// whether the error is meant for good or not (neoq has no failure for good), and no backoff
// is ever waited. The model's lifecycle of one attempt, failures counted when they fail.
var NoRetriesPromises = sut.Declared{Order: model.Any, FixedLease: time.Hour, OwnsTransactions: true,
	Shape: model.Shape{Life: model.Lifecycle{MaxAttempts: 1}}}

// The adapter's timing, none of it a promise of neoq's.
const (
	queueName = "pgqcheck"
	// pollEvery is each claim backend's PendingJobCheckInterval: a job enqueued before the
	// claim's backend listened reaches it only through a poll's announcement.
	pollEvery = 25 * time.Millisecond
	// probeEvery is how often a claim that has been handed nothing reads whether anything is
	// claimable.
	probeEvery = 5 * time.Millisecond
	// giveUp bounds a claim that reads a claimable job which neoq never hands over.
	giveUp = 30 * time.Second
	// jobTimeout is the handler's JobTimeout: longer than any claim is held.
	jobTimeout = 24 * time.Hour
)

// Queue is neoq on one installed database. It numbers each job's claims and keeps which claim
// is the latest of each job.
type Queue struct {
	mu       sync.Mutex
	claims   map[int64]int64     // job -> claims so far
	latest   map[int64]*claim    // job -> its latest claim
	made     map[[2]int64]*claim // (job, claim number) -> every claim made
	live     map[*claim]bool     // claims whose backend is not yet stopped
	watching bool                // a watch (watchReset) runs
	payloads int64

	enq        *backend // the backend that enqueues: one per Queue, its own handlers none
	migrations []migration
	noRetries  bool // jobs are enqueued with MaxRetries 0

	stopping sync.WaitGroup // backends being stopped
}

// claim is one claim: its neoq backend, the job its handler was handed and the transaction that
// holds that job's row.
type claim struct {
	b *backend

	mu     sync.Mutex
	state  claimState
	handed chan *jobs.Job // the first job, once
	decide chan error     // the handler's return

	job, gen int64
	pid      int32
	xid      string // the holding transaction's 32-bit id, as pg_stat_activity shows it
	xid8     string // the same, with its epoch, for pg_xact_status
}

type claimState int

const (
	searching claimState = iota // no job handed over yet
	closing                     // the claim found nothing: no job is taken any more
	handed                      // the handler holds a job, not yet registered
	held                        // the claim holds the job's transaction
	deciding                    // the handler was told how to return: neoq writes the status
	completed                   // that commit took effect
	lapsed                      // the transaction ended without the completion
)

// backend is one neoq postgres backend, its connections named by a unique application_name.
type backend struct {
	nq     neoq.Neoq
	app    string
	dsn    string
	ctx    context.Context // every context neoq's goroutines run in derives from it
	cancel context.CancelFunc
}

var backends atomic.Int64

// newBackend starts a neoq postgres backend on the database c is connected to (its
// connection string, not its dialer: the suite's fault proxy sits on the session's own
// connection, not on neoq's). poll is its PendingJobCheckInterval.
func newBackend(ctx context.Context, c *pgx.Conn, poll time.Duration) (*backend, error) {
	app := fmt.Sprintf("pgqcheck-neoq-%d", backends.Add(1))
	dsn, err := withApp(c.Config().ConnString(), app)
	if err != nil {
		return nil, err
	}
	bctx, cancel := context.WithCancel(context.Background())
	b := &backend{app: app, dsn: dsn, ctx: bctx, cancel: cancel}
	type made struct {
		nq  neoq.Neoq
		err error
	}
	ch := make(chan made, 1)
	go func() {
		nq, err := neoq.New(bctx, neoq.WithBackend(postgres.Backend), postgres.WithConnectionString(dsn),
			neoq.WithPendingJobCheckInterval(poll), neoq.WithLogLevel(logging.LogLevelError),
			postgres.WithTransactionTimeout(0))
		ch <- made{nq, err}
	}()
	select {
	case m := <-ch:
		if m.err != nil {
			cancel()
			return nil, fmt.Errorf("neoq's backend: %w", m.err)
		}
		b.nq = m.nq
		b.nq.SetLogger(quiet{done: bctx.Done()})
		return b, nil
	case <-ctx.Done():
		cancel()
		// The backend neoq is still making is shut down once made.
		go func() {
			if m := <-ch; m.err == nil {
				m.nq.Shutdown(bctx)
			}
		}()
		return nil, ctx.Err()
	}
}

// withApp names a connection string's connections.
func withApp(dsn, app string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", err
		}
		q := u.Query()
		q.Set("application_name", app)
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	return dsn + " application_name=" + app, nil
}

// stop cancels the backend's context, after which neoq acquires no connection (a job's
// transaction in flight rolls back), then shuts it down in the background and ends what
// neoq's Shutdown leaves open: its LISTEN connection and its migrator's idle connection,
// found by their application_name.
//
// Shutdown is given a context already cancelled. It first announces job id -1 on each of the
// backend's queues, and every backend listening on that queue, in any process, takes that
// announcement as its own shutdown and stops listening for good: one claim's end would deafen
// every other claim. With the context cancelled, the announcement's connection acquire fails
// and nothing is sent (neoq's acquire leaves one goroutine blocked when it fails).
//
// Shutdown then closes neoq's pool, which waits for every connection neoq acquired to come
// back; a connection acquired just as the context was cancelled never does (the goroutine
// that acquired it blocks handing it over), so Shutdown is waited for only a while.
func (q *Queue) stop(b *backend) {
	b.cancel()
	q.stopping.Add(1)
	go func() {
		defer q.stopping.Done()
		shut := make(chan struct{})
		go func() { b.nq.Shutdown(b.ctx); close(shut) }()
		select {
		case <-shut:
		case <-time.After(500 * time.Millisecond):
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		base, err := pgx.ParseConfig(b.dsn)
		if err != nil {
			return
		}
		base.RuntimeParams["application_name"] = b.app + "-reaper"
		c, err := pgx.ConnectConfig(ctx, base)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		_, _ = c.Exec(ctx, `SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE application_name = $1`, b.app)
	}()
}

// quiet is neoq's logger: it says nothing (neoq's default logs to stdout). It also ends
// neoq's pending-job poller once its backend is stopped: Shutdown cancels the poller's
// context, but a poller that was acquiring a connection then logs this message and waits for
// its next tick, forever, each time acquiring in vain.
type quiet struct{ done <-chan struct{} }

const pollerStuck = "[pending_jobs] unable to get database connection"

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (l quiet) Error(msg string, _ ...any) {
	if msg != pollerStuck {
		return
	}
	select {
	case <-l.done:
		runtime.Goexit() // the poller's goroutine, which neoq's Shutdown does not end
	default:
	}
}

// Schema names neoq's migrations, which Migrate runs.
func (q *Queue) Schema() string { return "neoq's migrations (postgres.Backend)" }

// migration is a row of golang-migrate's bookkeeping table, which neoq's migrations read.
type migration struct {
	version int64
	dirty   bool
}

// Migrate runs neoq's migrations as every backend does when it starts: the backend that
// enqueues is started here. It keeps what neoq's migrator recorded (Rebuild).
func (q *Queue) Migrate(ctx context.Context, c *pgx.Conn) error {
	b, err := newBackend(ctx, c, time.Hour)
	if err != nil {
		return err
	}
	rows, _ := c.Query(ctx, `SELECT version, dirty FROM neoq_schema_migrations`)
	var ms []migration
	var m migration
	_, err = pgx.ForEachRow(rows, []any{&m.version, &m.dirty}, func() error { ms = append(ms, m); return nil })
	if err != nil {
		q.stop(b)
		return err
	}
	q.mu.Lock()
	q.enq, q.migrations = b, ms
	q.mu.Unlock()
	// A run ends without a call to the queue: the enqueuing backend stops when the Queue is
	// dropped. Its database is dropped with FORCE before that.
	runtime.SetFinalizer(q, func(q *Queue) {
		if q.enq != nil {
			q.enq.cancel()
			go q.enq.nq.Shutdown(q.enq.ctx)
		}
	})
	return nil
}

// Rebuild puts back golang-migrate's record of neoq's migrations, which the suite's reset
// empties with every table the install made: without it each claim's backend would run the
// migrations again, and the trigger's CREATE TRIGGER fails the second time.
func (q *Queue) Rebuild(ctx context.Context, c *pgx.Conn) error {
	for _, m := range q.migrations {
		if _, err := c.Exec(ctx, `INSERT INTO neoq_schema_migrations (version, dirty) VALUES ($1, $2)`, m.version, m.dirty); err != nil {
			return err
		}
	}
	return nil
}

func (q *Queue) Enqueue(ctx context.Context, c *pgx.Conn, payload string) (int64, error) {
	return q.EnqueueAt(ctx, c, payload, 0)
}

// EnqueueAt enqueues through neoq's Enqueue, due after delay (jobs.Job.RunAfter). The payload
// carries the adapter's number for it: neoq refuses a second unprocessed job with the same
// payload (its fingerprint), and the suite's payloads need not be distinct.
func (q *Queue) EnqueueAt(ctx context.Context, c *pgx.Conn, payload string, delay time.Duration) (int64, error) {
	if c.PgConn().TxStatus() != 'I' {
		return 0, errors.New("neoq enqueues on its own connection, never inside a caller's transaction")
	}
	q.mu.Lock()
	q.payloads++
	n := q.payloads
	enq := q.enq
	q.mu.Unlock()
	if enq == nil {
		return 0, errors.New("neoq's enqueuing backend is not started (no Migrate)")
	}
	j := &jobs.Job{Queue: queueName, Payload: map[string]any{"payload": payload, "n": n}}
	if q.noRetries {
		zero := 0
		j.MaxRetries = &zero
	}
	if delay > 0 {
		j.RunAfter = time.Now().Add(delay)
	}
	id, err := enq.nq.Enqueue(ctx, j)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(id, 10, 64)
}

// Claim starts a backend with one handler, of concurrency 1, and answers the first job the
// handler is called with; or not-found, when a read (probe) finds no job a claim could take
// before any job is handed over.
func (q *Queue) Claim(ctx context.Context, c *pgx.Conn, _ time.Duration, _ string) (int64, int64, bool, error) {
	b, err := newBackend(ctx, c, pollEvery)
	if err != nil {
		return 0, 0, false, err
	}
	cl := &claim{b: b, handed: make(chan *jobs.Job, 1), decide: make(chan error, 1)}
	q.mu.Lock()
	if q.live == nil {
		q.live = map[*claim]bool{}
	}
	q.live[cl] = true
	q.mu.Unlock()
	started := make(chan error, 1)
	go func() {
		started <- b.nq.Start(b.ctx, handler.New(queueName, cl.handle,
			handler.Concurrency(1), handler.JobTimeout(jobTimeout)))
	}()
	select {
	case err = <-started:
	case <-time.After(giveUp):
		err = errors.New("neoq's Start did not return within 30 s")
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		q.end(cl)
		return 0, 0, false, err
	}
	deadline := time.Now().Add(giveUp)
	tick := time.NewTicker(probeEvery)
	defer tick.Stop()
	for {
		select {
		case j := <-cl.handed:
			return q.took(ctx, c, cl, j)
		default:
		}
		n, err := q.probe(ctx, c)
		if err != nil {
			q.end(cl)
			return 0, 0, false, err
		}
		if n == 0 && cl.close() {
			q.end(cl)
			return 0, 0, false, nil
		}
		if time.Now().After(deadline) {
			q.end(cl)
			return 0, 0, false, fmt.Errorf("neoq handed no job over within %s while %d were claimable", giveUp, n)
		}
		select {
		case j := <-cl.handed:
			return q.took(ctx, c, cl, j)
		case <-tick.C:
		case <-ctx.Done():
			q.end(cl)
			return 0, 0, false, ctx.Err()
		}
	}
}

// handle is the claim's handler. The first call that comes while the claim searches takes the
// claim's job and returns as the suite decides; any other waits for the backend's end.
func (cl *claim) handle(ctx context.Context) error {
	j, err := jobs.FromContext(ctx)
	cl.mu.Lock()
	first := err == nil && cl.state == searching
	if first {
		cl.state = handed
	}
	cl.mu.Unlock()
	if !first {
		<-ctx.Done()
		return ctx.Err()
	}
	cl.handed <- j
	select {
	case err := <-cl.decide:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close ends the claim's search; false when a job was handed over first.
func (cl *claim) close() bool {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.state != searching {
		return false
	}
	cl.state = closing
	return true
}

// took registers the job handed over: the transaction that holds its row (the row's xmax,
// a backend of the claim's) is the claim's lease.
func (q *Queue) took(ctx context.Context, c *pgx.Conn, cl *claim, j *jobs.Job) (int64, int64, bool, error) {
	if err := clearStats(ctx, c); err != nil {
		q.end(cl)
		return 0, 0, false, err
	}
	var app string
	var cur int64
	err := c.QueryRow(ctx, `SELECT a.pid, a.backend_xid::text, a.application_name, pg_snapshot_xmax(pg_current_snapshot())::text::bigint
		FROM neoq_jobs j JOIN pg_stat_activity a ON a.backend_xid::text = j.xmax::text
		WHERE j.id = $1 AND a.datname = current_database()`, j.ID).Scan(&cl.pid, &cl.xid, &app, &cur)
	if err == nil && app != cl.b.app {
		err = fmt.Errorf("job %d is held by %s, not by the claim's backend %s", j.ID, app, cl.b.app)
	}
	if err != nil {
		q.end(cl)
		if errors.Is(err, pgx.ErrNoRows) {
			err = fmt.Errorf("job %d was handed over, but no transaction of the database holds its row", j.ID)
		}
		return 0, 0, false, err
	}
	// The 32-bit id is the one within 2³¹ of the snapshot's xmax (a running transaction's id
	// may lie on either side of it).
	x, _ := strconv.ParseUint(cl.xid, 10, 32)
	cl.xid8 = strconv.FormatInt(cur+int64(int32(uint32(x)-uint32(cur))), 10)
	q.mu.Lock()
	if q.claims == nil {
		q.claims, q.latest, q.made = map[int64]int64{}, map[int64]*claim{}, map[[2]int64]*claim{}
	}
	q.claims[j.ID]++
	cl.job, cl.gen = j.ID, q.claims[j.ID]
	q.latest[j.ID], q.made[[2]int64{j.ID, cl.gen}] = cl, cl
	watch := !q.watching
	q.watching = true
	q.mu.Unlock()
	cl.mu.Lock()
	cl.state = held
	cl.mu.Unlock()
	if watch {
		go q.watchReset(c.Config().ConnString())
	}
	return cl.job, cl.gen, true, nil
}

func clearStats(ctx context.Context, c *pgx.Conn) error {
	if c.PgConn().TxStatus() == 'I' {
		return nil
	}
	_, err := c.Exec(ctx, `SELECT pg_stat_clear_snapshot()`)
	return err
}

// probe counts the jobs a claim could take now: due, not processed, and not held by a live
// claim's transaction. It takes no row lock, so it neither hides a job from neoq nor waits;
// a row some other transaction locks (a stopped claim's stale fetch) counts as claimable,
// which only makes the claim wait for neoq to hand it over.
func (q *Queue) probe(ctx context.Context, c *pgx.Conn) (int64, error) {
	q.mu.Lock()
	xids := []string{}
	for _, cl := range q.latest {
		cl.mu.Lock()
		if cl.state == held || cl.state == deciding {
			xids = append(xids, cl.xid)
		}
		cl.mu.Unlock()
	}
	q.mu.Unlock()
	if err := clearStats(ctx, c); err != nil {
		return 0, err
	}
	var n int64
	err := c.QueryRow(ctx, `SELECT count(*) FROM neoq_jobs j
		WHERE j.queue = $1 AND j.status <> 'processed' AND j.run_after <= clock_timestamp()
		AND NOT (coalesce(j.xmax::text = ANY($2::text[]), false) AND EXISTS (SELECT 1 FROM pg_stat_activity a
			WHERE a.backend_xid::text = j.xmax::text AND a.datname = current_database()))`, queueName, xids).Scan(&n)
	return n, err
}

// Complete makes the claim's handler return nil, as a handler that succeeded does, and
// answers whether neoq's transaction committed: the status written, processed. A claim
// whose transaction ended first (Expire) completes nothing.
func (q *Queue) Complete(ctx context.Context, c *pgx.Conn, id, gen int64) (int64, error) {
	return q.decide(ctx, c, id, gen, nil)
}

// failing is a Queue whose claims also fail: a GoFailer.
type failing struct{ *Queue }

// Fail makes the claim's handler return an error with the failure's text, as a handler that
// failed does; retryable or not, for neoq has no failure for good. It answers as Complete.
func (f failing) Fail(ctx context.Context, c *pgx.Conn, id, gen int64, _ bool, text string) (int64, error) {
	return f.decide(ctx, c, id, gen, errors.New(text))
}

// decide makes the claim's handler return with ret and answers whether neoq's transaction,
// which writes the job's status by ret, committed.
func (q *Queue) decide(ctx context.Context, c *pgx.Conn, id, gen int64, ret error) (int64, error) {
	if c.PgConn().TxStatus() != 'I' {
		return 0, errors.New("neoq completes on its own connection, never inside a caller's transaction")
	}
	cl := q.claimOf(id, gen)
	if cl == nil {
		return 0, nil
	}
	cl.mu.Lock()
	if cl.state != held {
		cl.mu.Unlock()
		return 0, nil
	}
	cl.state = deciding
	cl.mu.Unlock()
	cl.decide <- ret
	status, err := q.outcome(ctx, c, cl)
	if err != nil {
		// The handler has returned, and neoq's commit may take effect: the outcome is learnt
		// on a connection of the adapter's, and the answer is unknown (not the server's).
		go q.settle(cl)
		return 0, fmt.Errorf("reading whether neoq committed job %d: %v", id, err)
	}
	q.settled(cl, status)
	if status == "committed" {
		return 1, nil
	}
	return 0, nil
}

// settled records how the claim's decided transaction ended, and stops its backend.
func (q *Queue) settled(cl *claim, status string) {
	cl.mu.Lock()
	if status == "committed" {
		cl.state = completed
	} else {
		cl.state = lapsed
	}
	cl.mu.Unlock()
	q.end(cl)
}

// settle waits, on a connection of its own, for a decided claim whose outcome the session
// could not read.
func (q *Queue) settle(cl *claim) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	status := "unknown"
	if c, err := pgx.Connect(ctx, cl.b.dsn); err == nil {
		if st, err := q.outcome(ctx, c, cl); err == nil {
			status = st
		}
		c.Close(context.Background())
	}
	q.settled(cl, status)
}

// outcome waits for the claim's transaction to end and says how: committed or aborted.
func (q *Queue) outcome(ctx context.Context, c *pgx.Conn, cl *claim) (string, error) {
	for {
		var status *string
		if err := c.QueryRow(ctx, `SELECT pg_xact_status($1::text::xid8)`, cl.xid8).Scan(&status); err != nil {
			return "", err
		}
		if status == nil {
			return "", fmt.Errorf("transaction %s is too old for pg_xact_status", cl.xid8)
		}
		if *status != "in progress" {
			return *status, nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

func (q *Queue) claimOf(id, gen int64) *claim {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.made[[2]int64{id, gen}]
}

// end stops the claim's backend; its handler, still waiting, returns with the backend's
// context, and neoq rolls its transaction back.
func (q *Queue) end(cl *claim) {
	q.mu.Lock()
	live := q.live[cl]
	delete(q.live, cl)
	q.mu.Unlock()
	if live {
		q.stop(cl.b)
	}
}

// Expire ends the lease of the job's latest claim: the backend that holds its transaction is
// terminated (and waited for), as a worker process that dies ends it.
func (q *Queue) Expire(ctx context.Context, c *pgx.Conn, id int64) error {
	q.mu.Lock()
	cl := q.latest[id]
	q.mu.Unlock()
	if cl == nil {
		return nil
	}
	cl.mu.Lock()
	state := cl.state
	cl.mu.Unlock()
	if state != held && state != deciding {
		return nil
	}
	if err := terminate(ctx, c, cl); err != nil {
		return err
	}
	cl.mu.Lock()
	if cl.state == held {
		// A completion deciding meanwhile sets the state by its outcome, and stops the backend.
		cl.state = lapsed
		cl.mu.Unlock()
		q.end(cl)
		return nil
	}
	cl.mu.Unlock()
	return nil
}

// terminate ends the claim's transaction by terminating its backend, and waits until that
// backend has exited (its row lock released).
func terminate(ctx context.Context, c *pgx.Conn, cl *claim) error {
	if err := clearStats(ctx, c); err != nil {
		return err
	}
	var ended bool
	err := c.QueryRow(ctx, `SELECT coalesce(bool_or(pg_terminate_backend(pid, 10000)), true) FROM pg_stat_activity
		WHERE pid = $1 AND backend_xid::text = $2 AND datname = current_database()`, cl.pid, cl.xid).Scan(&ended)
	if err != nil {
		return err
	}
	if !ended {
		return fmt.Errorf("backend %d, which holds job %d, did not exit within 10 s of pg_terminate_backend", cl.pid, cl.job)
	}
	return nil
}

// watchReset ends every held claim when a reset waits for them. The suite's reset empties
// neoq's tables with TRUNCATE, which waits for every transaction holding a row; a claim
// nobody completed or expired holds its transaction open on neoq's connection, which the
// suite's sessions do not own. It runs while any claim is held, on a connection of its own.
func (q *Queue) watchReset(dsn string) {
	ctx := context.Background()
	var c *pgx.Conn
	defer func() {
		if c != nil {
			c.Close(ctx)
		}
	}()
	for {
		time.Sleep(20 * time.Millisecond)
		holding := q.heldClaims()
		if len(holding) == 0 {
			q.mu.Lock()
			// A claim taken meanwhile starts no watch of its own while this one runs.
			if holding = q.heldClaimsLocked(); len(holding) == 0 {
				q.watching = false
				q.mu.Unlock()
				return
			}
			q.mu.Unlock()
		}
		if c == nil || c.IsClosed() {
			var err error
			if c, err = pgx.Connect(ctx, dsn); err != nil {
				c = nil
				continue
			}
		}
		var waits bool
		err := c.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'relation'
			AND relation = 'neoq_jobs'::regclass AND mode = 'AccessExclusiveLock' AND NOT granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))`).Scan(&waits)
		if err != nil || !waits {
			continue
		}
		for _, cl := range holding {
			if terminate(ctx, c, cl) == nil {
				cl.mu.Lock()
				if cl.state == held {
					cl.state = lapsed
				}
				cl.mu.Unlock()
			}
			q.end(cl)
		}
	}
}

func (q *Queue) heldClaims() []*claim {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.heldClaimsLocked()
}

func (q *Queue) heldClaimsLocked() []*claim {
	var out []*claim
	for cl := range q.live {
		cl.mu.Lock()
		if cl.state == held || cl.state == deciding {
			out = append(out, cl)
		}
		cl.mu.Unlock()
	}
	return out
}

// Snapshot lists every job: neoq_jobs' rows (processed ones done; others running where their
// latest claim still holds the row or its lease ended without a completion, else ready) and
// neoq_dead_jobs' (dead). It takes no row lock.
//
// A claim counted while the read ran leaves the read's row and its claim number apart: such a
// read is taken again.
func (q *Queue) Snapshot(ctx context.Context, c *pgx.Conn) ([]model.Row, error) {
	return sut.ReadStable(func() ([]model.Row, bool, error) { return q.snapshot(ctx, c) })
}

func (q *Queue) snapshot(ctx context.Context, c *pgx.Conn) (out []model.Row, stable bool, err error) {
	type view struct {
		state    claimState
		gen      int64
		pid      int32
		xid      string
		holdsRow bool
	}
	q.mu.Lock()
	claims, latest := make(map[int64]int64, len(q.claims)), make(map[int64]view, len(q.latest))
	for k, v := range q.claims {
		claims[k] = v
	}
	for k, cl := range q.latest {
		cl.mu.Lock()
		latest[k] = view{state: cl.state, gen: cl.gen, pid: cl.pid, xid: cl.xid}
		cl.mu.Unlock()
	}
	q.mu.Unlock()
	running, err := sut.RunningTransactions(ctx, c)
	if err != nil {
		return nil, false, err
	}
	rows, err := c.Query(ctx, `SELECT id, status::text, xmax::text, 0, '' FROM neoq_jobs
		UNION ALL SELECT id, 'dead', '0', coalesce(retries, 0), coalesce(error, '') FROM neoq_dead_jobs ORDER BY 1`)
	if err != nil {
		return nil, false, err
	}
	type read struct {
		id                  int64
		status, xmax, error string
		retries             int64
	}
	var reads []read
	var rd read
	if _, err := pgx.ForEachRow(rows, []any{&rd.id, &rd.status, &rd.xmax, &rd.retries, &rd.error}, func() error { reads = append(reads, rd); return nil }); err != nil {
		return nil, false, err
	}
	q.mu.Lock()
	stable = true
	for _, rd := range reads {
		stable = stable && q.claims[rd.id] == claims[rd.id]
	}
	q.mu.Unlock()
	for _, rd := range reads {
		r := model.Row{ID: rd.id, State: model.Ready, Generation: claims[rd.id]}
		v, claimed := latest[rd.id]
		switch {
		case rd.status == "processed":
			r.State = model.Done
		case rd.status == "dead":
			// neoq counts a job's runs after its first in retries; a dead job's last run is
			// one more. The handler's error is kept as handler.Exec wrapped it.
			r.State, r.Attempts, r.Kept = model.Dead, rd.retries+1, strings.TrimPrefix(rd.error, execWrap)
		case claimed && (v.state == held || v.state == deciding):
			// Held while its transaction runs and holds the row; a transaction that ended by
			// itself (its connection lost) ended the lease.
			live := running[sut.Transaction{PID: uint32(v.pid), XID: v.xid}] && rd.xmax == v.xid
			r.State, r.Generation, r.LeaseLive = model.Running, v.gen, live
		case claimed && v.state == lapsed:
			r.State, r.Generation = model.Running, v.gen
		}
		out = append(out, r)
	}
	return out, stable, nil
}

// execWrap is how neoq's handler.Exec wraps a handler's error before updateJob keeps it.
const execWrap = "job failed to process: "

// Reset forgets every job and claim, and stops every backend but the one that enqueues (its
// database stays): the suite emptied the queue.
func (q *Queue) Reset() {
	q.mu.Lock()
	var live []*claim
	for cl := range q.live {
		live = append(live, cl)
	}
	q.claims, q.latest, q.made = nil, nil, nil
	q.mu.Unlock()
	for _, cl := range live {
		q.end(cl)
	}
	done := make(chan struct{})
	go func() { q.stopping.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
	}
}
