// Package gue judges gue (github.com/vgarvardt/gue/v5) through its own Go API: Client.Enqueue,
// Client.LockJob as the claim, and Job.Delete then Job.Done as the completion, on the
// session's connection as gue's ConnPool.
//
// What gue v5.8.0 promises (README and package docs): a job is locked by a transaction-level
// row lock (FOR UPDATE SKIP LOCKED) held from LockJob until Done or Error, so no two workers
// hold a job at once and a worker that dies releases it; the worker that holds the lock is the
// only one whose Delete and Done take effect, so a replaced worker cannot complete (fencing);
// a job is deleted when done; claims take jobs by priority, not in insertion order; a job its
// worker reports failed (Job.Error) is retried after the client's backoff, with error_count
// counting the failures and last_error keeping the latest, and a worker's ErrDiscardJob (a
// failure for good) deletes the job; there is no attempt limit (a backoff that returns a
// negative duration discards, which the adapter's does not). There is no attempt counter: the
// adapter numbers each job's claims, and the lease is the claim's transaction.
package gue

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oklog/ulid/v2"
	"github.com/vgarvardt/gue/v5"
	"github.com/vgarvardt/gue/v5/adapter"
	"github.com/vgarvardt/gue/v5/adapter/pgxv5"

	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// Version is the gue release judged, the one go.mod pins.
const Version = "v5.8.0"

// Name is the queue's registered name.
const Name = "gue-" + Version

func init() {
	sut.Register(sut.GoDef{Name: Name, New: func() sut.GoQueue { return &Queue{} }, Declared: Promises})
}

// Backoff is the delay after each failure: the client's gue.NewConstantBackoff. gue's default,
// an exponential from 1 s with jitter, is too long for a run and not exact enough to judge; a
// constant one keeps a job that fails again and again, which gue has no limit on, due within
// a drain's wait.
const Backoff = 200 * time.Millisecond

// Promises is what gue declares, as the model judges it (see the package doc): claims by
// priority, a claim's lease its transaction, done and discarded jobs deleted, failures counted
// when they are reported, each retried after Backoff, with no attempt limit.
var Promises = sut.Declared{Order: model.Any, FixedLease: time.Hour, Shape: model.Shape{TxBound: true, DoneDeleted: true, DeadDeleted: true,
	Life: model.Lifecycle{Backoff: Backoff, Factor: 1}}}

var backoff = gue.NewConstantBackoff(Backoff)

// Queue is gue on one installed database. gue's ids are ULIDs; the adapter numbers them in
// enqueue order, and keeps which claim holds which job. It has no locker: a claim holds its
// job's row lock until the job ends, so another session's lock of it waits by design.
type Queue struct {
	backoff gue.Backoff // nil: backoff
	mu      sync.Mutex
	ids     map[string]int64
	claims  map[int64]int64      // job -> claims so far
	holder  map[int64]*handle    // job -> the claim whose transaction holds it
	made    map[[2]int64]*handle // (job, claim number) -> every claim made
}

// handle is one claim: gue's job, whose transaction holds the row, on the connection it runs on.
type handle struct {
	job *gue.Job
	c   *pgx.Conn
	pid uint32
	xid string
	gen int64
	// ended: gue's Done returned; a Job's Delete and Done called again are no-ops that return nil.
	ended bool
}

// Schema is gue's migration, migrations/schema.sql of the module go.mod pins, read where the
// go command keeps it: gue ships it as a file to apply, not as Go.
func (q *Queue) Schema() string {
	schemaOnce.Do(func() {
		out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/vgarvardt/gue/v5").Output()
		if err != nil {
			schemaErr = fmt.Errorf("locating gue's module: %v", err)
			return
		}
		b, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "migrations", "schema.sql"))
		schema, schemaErr = string(b), err
	})
	if schemaErr != nil {
		return "DO $$ BEGIN RAISE EXCEPTION '" + strings.ReplaceAll(schemaErr.Error(), "'", "") + "'; END $$"
	}
	return schema
}

var (
	schemaOnce sync.Once
	schema     string
	schemaErr  error
)

func (q *Queue) client(c *pgx.Conn) (*gue.Client, error) {
	b := q.backoff
	if b == nil {
		b = backoff
	}
	return gue.NewClient(pool{c}, gue.WithClientBackoff(b))
}

func (q *Queue) Enqueue(ctx context.Context, c *pgx.Conn, payload string) (int64, error) {
	cl, err := q.client(c)
	if err != nil {
		return 0, err
	}
	// The job's number is given before the insert is sent: an insert whose answer is lost may
	// have taken effect, and its row must still be known.
	jobID := ulid.Make()
	q.mu.Lock()
	if q.ids == nil {
		q.ids, q.claims, q.holder, q.made = map[string]int64{}, map[int64]int64{}, map[int64]*handle{}, map[[2]int64]*handle{}
	}
	id := int64(len(q.ids) + 1)
	q.ids[jobID.String()] = id
	q.mu.Unlock()
	return id, cl.EnqueueWithID(ctx, &gue.Job{Type: "pgqcheck", Args: []byte(payload)}, jobID)
}

var errHolding = errors.New("the worker's transaction is open: it holds a job already")

func (q *Queue) Claim(ctx context.Context, c *pgx.Conn, _ time.Duration, _ string) (int64, int64, bool, error) {
	if c.PgConn().TxStatus() != 'I' {
		return 0, 0, false, errHolding
	}
	cl, err := q.client(c)
	if err != nil {
		return 0, 0, false, err
	}
	j, err := cl.LockJob(ctx, "")
	if err != nil || j == nil {
		return 0, 0, false, err
	}
	// The transaction's id tells its backend from a later one with the same pid (Expire).
	var xid string
	if err := j.Tx().QueryRow(ctx, `SELECT xid(pg_current_xact_id())::text`).Scan(&xid); err != nil {
		_ = j.Tx().Rollback(ctx)
		return 0, 0, false, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	id := q.ids[j.ID.String()]
	q.claims[id]++
	h := &handle{job: j, c: c, pid: c.PgConn().PID(), xid: xid, gen: q.claims[id]}
	q.holder[id], q.made[[2]int64{id, h.gen}] = h, h
	return id, q.claims[id], true, nil
}

// Complete calls the claim's Job.Delete and Job.Done, as the worker holding that claim's job
// would: a claim whose transaction has ended (rolled back, its backend gone) is refused by gue,
// and completes nothing.
func (q *Queue) Complete(ctx context.Context, c *pgx.Conn, id, gen int64) (int64, error) {
	h := q.claimOf(id, gen)
	if h == nil || h.ended || h.c.IsClosed() || h.c.PgConn().TxStatus() == 'I' {
		// No such claim, or its connection or transaction is gone (ended by the suite, which gue's
		// transaction object does not see): nothing of it can commit.
		return 0, nil
	}
	err := h.job.Delete(ctx)
	if err == nil {
		err = h.job.Done(ctx)
	}
	switch {
	case errors.Is(err, pgx.ErrTxClosed) || errors.Is(err, adapter.ErrTxClosed):
		return 0, nil // refused before anything was sent
	case err != nil:
		return 0, err // a lost reply to the commit leaves its outcome unknown
	}
	h.ended = true
	q.release(id, h)
	return 1, nil
}

// Fail calls the claim's Job.Error, as the worker holding that claim's job would when its
// handler fails: with the failure's text, retried after the backoff, or, for a failure for
// good, gue.ErrDiscardJob, which deletes the job. Job.Error ends the claim's transaction. A
// claim whose transaction has ended changes nothing, as in Complete.
func (q *Queue) Fail(ctx context.Context, c *pgx.Conn, id, gen int64, retryable bool, text string) (int64, error) {
	h := q.claimOf(id, gen)
	if h == nil || h.ended || h.c.IsClosed() || h.c.PgConn().TxStatus() == 'I' {
		return 0, nil
	}
	jErr := errors.New(text)
	if !retryable {
		jErr = gue.ErrDiscardJob(text)
	}
	err := h.job.Error(ctx, jErr)
	switch {
	case errors.Is(err, pgx.ErrTxClosed) || errors.Is(err, adapter.ErrTxClosed):
		return 0, nil
	case err != nil:
		return 0, err
	}
	h.ended = true
	q.release(id, h)
	return 1, nil
}

// claimOf is the claim (id, gen).
func (q *Queue) claimOf(id, gen int64) *handle {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.made[[2]int64{id, gen}]
}

func (q *Queue) release(id int64, h *handle) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.holder[id] == h {
		delete(q.holder, id)
	}
}

// Expire ends the claim's transaction, which is its lease: its own, rolled back through gue's
// Job.Tx, when the expiring session holds the job; else the holder's backend, terminated.
func (q *Queue) Expire(ctx context.Context, c *pgx.Conn, id int64) error {
	q.mu.Lock()
	h := q.holder[id]
	q.mu.Unlock()
	if h == nil {
		return nil
	}
	defer q.release(id, h)
	if h.c == c {
		if err := h.job.Tx().Rollback(ctx); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
			return err
		}
		return nil
	}
	if c.PgConn().TxStatus() != 'I' {
		if _, err := c.Exec(ctx, `SELECT pg_stat_clear_snapshot()`); err != nil {
			return err
		}
	}
	var ended bool
	err := c.QueryRow(ctx, `SELECT coalesce(bool_or(pg_terminate_backend(pid, 10000)), true) FROM pg_stat_activity
		WHERE pid = $1 AND backend_xid::text = $2 AND datname = current_database()`, int32(h.pid), h.xid).Scan(&ended)
	if err != nil {
		return err
	}
	if !ended {
		return fmt.Errorf("backend %d, which holds job %d, did not exit within 10 s of pg_terminate_backend", h.pid, id)
	}
	return nil
}

// Snapshot lists the jobs left (done ones are deleted): a row a claim's transaction holds
// locked is running, told apart by a FOR UPDATE SKIP LOCKED read in a transaction rolled back
// (on a session that holds a job itself, in a savepoint, where its own job is told by its
// holder).
//
// A claim of a job counted while the read ran leaves the read's row and its claim number
// apart (a failure by that claim already in the row, a number from before it): such a read
// is taken again.
func (q *Queue) Snapshot(ctx context.Context, c *pgx.Conn) ([]model.Row, error) {
	return sut.ReadStable(func() ([]model.Row, bool, error) { return q.snapshot(ctx, c) })
}

func (q *Queue) snapshot(ctx context.Context, c *pgx.Conn) (out []model.Row, stable bool, err error) {
	q.mu.Lock()
	claims, holders := make(map[int64]int64, len(q.claims)), make(map[int64]*handle, len(q.holder))
	for k, v := range q.claims {
		claims[k] = v
	}
	for k, v := range q.holder {
		holders[k] = v
	}
	q.mu.Unlock()
	// A worker whose connection died does not say so: its claim's row lock may by now be a
	// newer claim's, whose number is on its way. A holder kept was in its transaction, holding
	// the row, at an instant of the snapshot's call.
	if err := sut.DropEnded(ctx, c, holders, func(h *handle) sut.Transaction { return sut.Transaction{PID: h.pid, XID: h.xid} }); err != nil {
		return nil, false, err
	}
	begin, end := "BEGIN", "ROLLBACK"
	own := c.PgConn().TxStatus() != 'I'
	if own {
		begin, end = "SAVEPOINT pgqcheck_snapshot", "ROLLBACK TO SAVEPOINT pgqcheck_snapshot"
	}
	if _, err := c.Exec(ctx, begin); err != nil {
		return nil, false, err
	}
	defer c.Exec(context.Background(), end)
	rows, err := c.Query(ctx, `SELECT j.job_id, f.job_id IS NOT NULL, j.error_count, coalesce(j.last_error, '')
		FROM gue_jobs j LEFT JOIN (SELECT job_id FROM gue_jobs FOR UPDATE SKIP LOCKED) f ON f.job_id = j.job_id`)
	if err != nil {
		return nil, false, err
	}
	type read struct {
		ulid     string
		isFree   bool
		failures int32
		lastErr  string
	}
	var reads []read
	for rows.Next() {
		var r read
		if err := rows.Scan(&r.ulid, &r.isFree, &r.failures, &r.lastErr); err != nil {
			rows.Close()
			return nil, false, err
		}
		reads = append(reads, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	// Numbers are given before the insert is sent, so the ones known once the rows are read
	// name every row read.
	q.mu.Lock()
	ids := make(map[string]int64, len(reads))
	stable = true
	for _, rd := range reads {
		ids[rd.ulid] = q.ids[rd.ulid]
		stable = stable && q.claims[ids[rd.ulid]] == claims[ids[rd.ulid]]
	}
	q.mu.Unlock()
	for _, rd := range reads {
		isFree := rd.isFree
		r := model.Row{ID: ids[rd.ulid], State: model.Ready, Attempts: int64(rd.failures), Kept: rd.lastErr}
		r.Generation = claims[r.ID]
		// A locked row is running where a claim holds it. A lock no known claim holds is a
		// locker's, or a claim's whose answer is on its way (the claim may follow this read).
		if h := holders[r.ID]; h != nil && (!isFree || (own && h.c == c)) {
			r.State, r.LeaseLive, r.Generation = model.Running, true, h.gen
		}
		out = append(out, r)
	}
	sortRows(out)
	return out, stable, nil
}

func sortRows(rs []model.Row) {
	for i := 1; i < len(rs); i++ {
		for j := i; j > 0 && rs[j].ID < rs[j-1].ID; j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
}

// Reset forgets every id, claim and holder: the suite emptied the queue and ended every
// transaction.
func (q *Queue) Reset() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.ids, q.claims, q.holder, q.made = nil, nil, nil, nil
}

// pool is gue's ConnPool on one session's connection: a gue worker's LockJob takes a
// connection from its pool and keeps it in the job's transaction, as the session does here.
type pool struct{ c *pgx.Conn }

func (p pool) Exec(ctx context.Context, sql string, args ...any) (adapter.CommandTag, error) {
	return p.c.Exec(ctx, sql, args...)
}
func (p pool) QueryRow(ctx context.Context, sql string, args ...any) adapter.Row {
	return p.c.QueryRow(ctx, sql, args...)
}
func (p pool) Query(ctx context.Context, sql string, args ...any) (adapter.Rows, error) {
	return p.c.Query(ctx, sql, args...)
}
func (p pool) Begin(ctx context.Context) (adapter.Tx, error) {
	tx, err := p.c.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return pgxv5.NewTx(tx), nil
}
func (p pool) Ping(ctx context.Context) error { return p.c.Ping(ctx) }
func (p pool) Acquire(context.Context) (adapter.Conn, error) {
	return nil, errors.New("gue: one connection")
}
func (p pool) Close() error { return nil }
