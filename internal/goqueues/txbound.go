// Package goqueues holds queues written in Go, registered by name (sut.Register) so that go test
// (PGQCHECK_QUEUE=name) and pgqcheck (--queue name) judge them as they judge a folder of SQL. A
// binary judges the Go queues it links: the suite's tests and the pgqcheck command import this
// package; a team's own Go queue registers itself the same way from a package of its own.
package goqueues

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

func init() {
	// The lease is the claim's transaction: it outlives any run unless it ends.
	declared := sut.Declared{Shape: model.Shape{TxBound: true}, FixedLease: time.Hour}
	sut.Register(sut.GoDef{Name: "txbound", Declared: declared, New: func() sut.GoQueue { return &txBound{} }})
	sut.Register(sut.GoDef{Name: "txbound-commits-early", Declared: declared, Broken: true,
		New: func() sut.GoQueue { return &txBound{commitsEarly: true} }})
}

// txBound is a queue in the style of neoq and gue: a claim locks the job's row FOR UPDATE SKIP
// LOCKED in a transaction it keeps open on the worker's connection while the job runs; the
// completion marks the row done inside that transaction and commits it. The open transaction is
// the lease: a worker that dies, or whose backend ends, releases the job, and its completion,
// on whatever connection it has then, changes nothing. The fence is the handle a claim returns,
// which names its transaction: the backend holding it and the job's claim number, as a Go
// queue's job handle would (gue's *Job carries its transaction); a handle from an earlier claim
// completes nothing, even on the worker that claimed the job again.
type txBound struct {
	// commitsEarly is the mutant: the claim commits at once, and the completion runs in a
	// transaction of its own, outside the claim's, by id alone.
	commitsEarly bool

	mu     sync.Mutex
	holder map[int64]handle // job -> the claim whose transaction holds its row lock
	claims map[int64]int64  // job -> how many claims took it: the number in each handle
}

// handle names a claim's transaction: the backend and its transaction id (the backend's pid
// alone could name another backend later, pids being reused), and the job's claim number.
type handle struct {
	pid uint32
	xid string
	gen int64
}

const txSchema = `CREATE TABLE jobs (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  done boolean NOT NULL DEFAULT false,
  payload jsonb NOT NULL
);`

func (q *txBound) Schema() string { return txSchema }

func (q *txBound) Enqueue(ctx context.Context, c *pgx.Conn, payload string) (int64, error) {
	var id int64
	err := c.QueryRow(ctx, `INSERT INTO jobs(payload) VALUES ($1) RETURNING id`, payload).Scan(&id)
	return id, err
}

// errHolding: a worker works one job at a time; a second claim would join the first's
// transaction, and the first completion would commit both.
var errHolding = errors.New("the worker's transaction is open: it holds a job already")

func (q *txBound) Claim(ctx context.Context, c *pgx.Conn, _ time.Duration, _ string) (int64, int64, bool, error) {
	if c.PgConn().TxStatus() != 'I' {
		return 0, 0, false, errHolding
	}
	if _, err := c.Exec(ctx, "BEGIN"); err != nil {
		return 0, 0, false, err
	}
	var id int64
	var xid string
	err := c.QueryRow(ctx, `SELECT id, xid(pg_current_xact_id())::text FROM jobs WHERE NOT done ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 1`).Scan(&id, &xid)
	if err != nil {
		_, rerr := c.Exec(ctx, "ROLLBACK")
		if errors.Is(err, pgx.ErrNoRows) {
			return 0, 0, false, rerr
		}
		return 0, 0, false, err
	}
	gen := q.claimed(id, c.PgConn().PID(), xid)
	if q.commitsEarly {
		if _, err := c.Exec(ctx, "COMMIT"); err != nil {
			return 0, 0, false, err
		}
	}
	return id, gen, true, nil
}

func (q *txBound) Complete(ctx context.Context, c *pgx.Conn, id, gen int64) (int64, error) {
	if q.commitsEarly {
		if c.PgConn().TxStatus() == 'T' {
			if _, err := c.Exec(ctx, "COMMIT"); err != nil {
				return 0, err
			}
		}
		tag, err := c.Exec(ctx, `UPDATE jobs SET done = true WHERE id = $1 AND NOT done`, id)
		return tag.RowsAffected(), err
	}
	// Only the transaction that holds the job completes it.
	h := q.holderOf(id)
	if h.pid != c.PgConn().PID() || h.gen != gen || c.PgConn().TxStatus() != 'T' {
		return 0, nil
	}
	tag, err := c.Exec(ctx, `UPDATE jobs SET done = true WHERE id = $1 AND NOT done`, id)
	if err != nil {
		_, _ = c.Exec(ctx, "ROLLBACK")
		return 0, err
	}
	if _, err := c.Exec(ctx, "COMMIT"); err != nil {
		return 0, err
	}
	q.release(id, h)
	return tag.RowsAffected(), nil
}

// Expire ends the transaction that is the lease: its own, rolled back, when the expiring session
// holds the job; else the holder's backend, terminated.
func (q *txBound) Expire(ctx context.Context, c *pgx.Conn, id int64) error {
	h := q.holderOf(id)
	pid := h.pid
	switch {
	case pid == 0:
		return nil
	case pid == c.PgConn().PID():
		// Released once the transaction is over: a snapshot in between must still see a holder.
		defer q.release(id, h)
		if c.PgConn().TxStatus() == 'I' {
			return nil
		}
		_, err := c.Exec(ctx, "ROLLBACK")
		return err
	}
	// Only the backend still in the claim's transaction is ended (a pid alone may by now name
	// another backend, of this run or of another). With a timeout, pg_terminate_backend waits
	// until it has exited, and its row lock is gone; only then is the job released here, and
	// only from that claim: a claim that took the job since (its holder had already gone) holds
	// it now.
	defer q.release(id, h)
	// Inside a transaction (the expiring session may hold a job itself) pg_stat_activity is read
	// once and kept: the cached view would not show a backend that started since.
	if _, err := c.Exec(ctx, `SELECT pg_stat_clear_snapshot()`); err != nil {
		return err
	}
	var ended bool
	err := c.QueryRow(ctx, `SELECT coalesce(bool_or(pg_terminate_backend(pid, 10000)), true) FROM pg_stat_activity
		WHERE pid = $1 AND backend_xid::text = $2 AND datname = current_database()`, int32(pid), h.xid).Scan(&ended)
	if err != nil {
		return err
	}
	if !ended {
		return fmt.Errorf("backend %d, which holds job %d, did not exit within 10 s of pg_terminate_backend", pid, id)
	}
	return nil
}

// Snapshot reads every job; a job not done whose row a claim's transaction holds locked is
// running (its lease live). It looks in a transaction of its own, rolled back, whose
// FOR UPDATE SKIP LOCKED tells the free rows from the held ones; on a session that holds a job
// itself, in a savepoint of that transaction, where its own job looks free and is told apart
// by who holds it.
//
// A locked row's claim number comes from what this queue knew just before it read the table:
// where a claim known then still held it, that claim's. A row locked by a claim this queue has
// not numbered is shown ready at the count then, as a free row is: that claim answers after the
// snapshot began, so it may come after it, and it may never answer at all (its reply lost, its
// transaction ended with its backend), which leaves the job as it was, never numbered. A done
// row's number is the count after the read. A row lock is not part of a statement's snapshot,
// so the rows' lockers cannot be read at one instant with them; every job's answer is true at
// some instant of the snapshot's call, which is all a history asks of it.
func (q *txBound) Snapshot(ctx context.Context, c *pgx.Conn) ([]model.Row, error) {
	holders, claims := q.known()
	// A worker whose connection died does not say so: its claim's row lock may by now be a
	// newer claim's, whose number is on its way. A holder kept was in its transaction, holding
	// the row, at an instant of the snapshot's call.
	if err := sut.DropEnded(ctx, c, holders, func(h handle) sut.Transaction { return sut.Transaction{PID: h.pid, XID: h.xid} }); err != nil {
		return nil, err
	}
	begin, end := "BEGIN", "ROLLBACK"
	own := c.PgConn().TxStatus() != 'I'
	if own {
		begin, end = "SAVEPOINT pgqcheck_snapshot", "ROLLBACK TO SAVEPOINT pgqcheck_snapshot"
	}
	if _, err := c.Exec(ctx, begin); err != nil {
		return nil, err
	}
	defer c.Exec(context.Background(), end)
	rows, err := c.Query(ctx, `SELECT j.id, j.done, f.id IS NOT NULL
		FROM jobs j LEFT JOIN (SELECT id FROM jobs WHERE NOT done FOR UPDATE SKIP LOCKED) f ON f.id = j.id
		ORDER BY j.id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []model.Row
	for rows.Next() {
		var r model.Row
		var done, isFree bool
		if err := rows.Scan(&r.ID, &done, &isFree); err != nil {
			return nil, err
		}
		h, held := holders[r.ID]
		r.Generation = claims[r.ID]
		switch {
		case done:
			// A done job's count no longer moves: the one known now is its last.
			r.State, r.Generation = model.Done, q.claimsOf(r.ID)
		case !held || isFree && h.pid != c.PgConn().PID():
			r.State = model.Ready
		default:
			r.State, r.LeaseLive, r.Generation = model.Running, true, h.gen
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// known copies who holds which job and how many claims each job had.
func (q *txBound) known() (map[int64]handle, map[int64]int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	holders, claims := make(map[int64]handle, len(q.holder)), make(map[int64]int64, len(q.claims))
	for id, h := range q.holder {
		holders[id] = h
	}
	for id, n := range q.claims {
		claims[id] = n
	}
	return holders, claims
}

// Reset forgets every holder and claim count: the suite emptied the queue and ended every
// transaction.
func (q *txBound) Reset() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.holder, q.claims = nil, nil
}

// claimed records a claim of job id by backend pid in transaction xid and returns its number.
func (q *txBound) claimed(id int64, pid uint32, xid string) int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.holder == nil {
		q.holder, q.claims = map[int64]handle{}, map[int64]int64{}
	}
	q.claims[id]++
	q.holder[id] = handle{pid, xid, q.claims[id]}
	return q.claims[id]
}

// release forgets that the claim h holds job id, unless another claim holds it by now.
func (q *txBound) release(id int64, h handle) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.holder[id] == h {
		delete(q.holder, id)
	}
}

func (q *txBound) claimsOf(id int64) int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.claims[id]
}

func (q *txBound) holderOf(id int64) handle {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.holder[id]
}
