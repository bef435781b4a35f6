// Package riverq judges River (github.com/riverqueue/river) through its own Go API: the
// migrator builds the schema, an insert-only client inserts, and the steps River's client and
// leader run internally (the producer's fetch, the completer, the rescuer and the scheduler)
// are made through the lowest public layer that reaches them, the pgx driver's executor
// (riverdriver.Executor), with the parameters River's own services pass.
//
// The module requires the oldest River judged; a module per River version (adapters for the
// newest, adapters/river047, adapters/river048) raises it and registers the queue, passing the
// one executor call whose signature changed between versions (Fetch).
package riverq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"pgqcheck/model"
	"pgqcheck/sut"
)

// Horizon is the rescuer's RescueStuckJobsAfter: a running job whose attempt began longer ago
// is stuck, and the rescuer retries it. River's default is an hour; a second keeps runs short
// and is what the model judges each claim's lease by.
const Horizon = time.Second

// maxAttempts is set on every insert, far above any program's claims of one job, so that no
// rescue discards a job: attempt limits are not judged here.
const maxAttempts = 1000

// Fetch is the producer's fetch of one available job for the named client: the executor's
// JobGetAvailable, whose result type differs between River versions.
type Fetch func(ctx context.Context, exec riverdriver.Executor, params *riverdriver.JobGetAvailableParams) ([]*rivertype.JobRow, error)

// Promises is what River promises, as the model judges it (v0.47.0 to v0.51.2; the doc of
// Config.RescueStuckJobsAfter in client.go, and the executor's completion): a job running longer
// than RescueStuckJobsAfter is rescued and retried, which "can result in repeat or duplicate
// execution" of a job still being worked, so a replaced worker may still run; a completion
// sets a running job's state by id, with no attempt to compare, so a replaced worker's
// completion is not refused (fencing is not promised); completed is final (done once, done
// terminal); claims take jobs by priority and scheduled time, not by id; a job is retried until
// its max attempts (not judged: see maxAttempts).
var Promises = sut.Declared{
	Order:       model.Any,
	Shape:       model.Shape{RescueOnly: true, Unfenced: true},
	FixedLease:  Horizon,
	ClaimsAlone: true,
}

// Register registers River under "river-<version>", the version the calling module's go.mod
// pins (the module's test checks the two agree).
func Register(version string, fetch Fetch) string {
	name := "river-" + version
	sut.Register(sut.GoDef{Name: name, Declared: Promises, New: func() sut.GoQueue { return New(fetch) }})
	return name
}

// Queue is River on one installed database.
type Queue struct {
	fetch  Fetch
	driver *riverpgxv5.Driver
	client *river.Client[pgx.Tx]
}

// New makes River's insert-only client: a driver without a pool, used through the
// transactions the suite's sessions open.
func New(fetch Fetch) *Queue {
	driver := riverpgxv5.New(nil)
	client, err := river.NewClient(driver, &river.Config{})
	if err != nil {
		panic(fmt.Sprintf("riverq: River refuses an insert-only client: %v", err))
	}
	return &Queue{fetch: fetch, driver: driver, client: client}
}

func (q *Queue) Schema() string { return "River's migrations (rivermigrate, direction up)" }

// Migrate runs River's migrator as its users do, on a pool of its own: each migration commits
// before the next (one transaction for all of them is refused: a later one uses an enum value
// an earlier one adds).
func (q *Queue) Migrate(ctx context.Context, c *pgx.Conn) error {
	cfg, err := pgxpool.ParseConfig(c.Config().ConnString())
	if err != nil {
		return err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	m, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return err
	}
	if _, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return err
	}
	// Autovacuum's truncation of a churned river_job holds its extension lock, and a claim
	// waiting on it looks to the scheduler like a wait on a backend outside the run.
	_, err = c.Exec(ctx, `ALTER TABLE river_job SET (autovacuum_enabled = false)`)
	return err
}

// args is the job's kind and payload, as a River user's JobArgs.
type args struct {
	Payload json.RawMessage `json:"payload"`
}

func (args) Kind() string { return "pgqcheck" }

func (q *Queue) Enqueue(ctx context.Context, c *pgx.Conn, payload string) (id int64, err error) {
	err = inTx(ctx, c, func(tx pgx.Tx) error {
		res, err := q.client.InsertTx(ctx, tx, args{Payload: json.RawMessage(payload)}, &river.InsertOpts{MaxAttempts: maxAttempts})
		if err == nil {
			id = res.Job.ID
		}
		return err
	})
	return id, err
}

// Claim is the producer's fetch (not reachable through River's client API): the job's
// attempt is its generation.
func (q *Queue) Claim(ctx context.Context, c *pgx.Conn, _ time.Duration, worker string) (id, gen int64, ok bool, err error) {
	err = q.exec(ctx, c, func(exec riverdriver.ExecutorTx) error {
		jobs, err := q.fetch(ctx, exec, &riverdriver.JobGetAvailableParams{
			ClientID: worker, MaxAttemptedBy: 100, MaxToLock: 1, Queue: river.QueueDefault})
		switch {
		case err != nil:
			return err
		case len(jobs) > 1:
			got := make([][2]int64, len(jobs))
			for i, j := range jobs {
				got[i] = [2]int64{j.ID, int64(j.Attempt)}
			}
			return &sut.ErrMultipleRows{Rows: got}
		case len(jobs) == 1:
			id, gen, ok = jobs[0].ID, int64(jobs[0].Attempt), true
		}
		return nil
	})
	return id, gen, ok, err
}

// Complete is the completer's step (not reachable through River's client API). River sets a
// job's final state by id on a running row and is given no attempt to compare, so gen is not
// passed. The executor answers with the job's row whether it changed it or not: the completion
// took effect where the row carries the finalized time this call wrote.
func (q *Queue) Complete(ctx context.Context, c *pgx.Conn, id, _ int64) (rows int64, err error) {
	finalized := time.Now().UTC().Truncate(time.Microsecond)
	err = q.exec(ctx, c, func(exec riverdriver.ExecutorTx) error {
		p := riverdriver.JobSetStateCompleted(id, finalized, nil)
		jobs, err := exec.JobSetStateIfRunningMany(ctx, &riverdriver.JobSetStateIfRunningManyParams{
			ID: []int64{p.ID}, Attempt: []*int{p.Attempt}, ErrData: [][]byte{p.ErrData},
			FinalizedAt: []*time.Time{p.FinalizedAt}, MetadataDoMerge: []bool{p.MetadataDoMerge},
			MetadataUpdates: [][]byte{p.MetadataUpdates}, ScheduledAt: []*time.Time{p.ScheduledAt},
			State: []rivertype.JobState{p.State}})
		if err != nil {
			return err
		}
		for _, j := range jobs {
			if j.ID == id && j.State == rivertype.JobStateCompleted && j.FinalizedAt != nil && j.FinalizedAt.Equal(finalized) {
				rows++
			}
		}
		return nil
	})
	return rows, err
}

// Rescue is River's leader running its rescuer and then its scheduler, each through the
// executor calls and parameters of River's own services (internal/maintenance), the rescuer's
// retry policy being one that retries at once. Its answer is the jobs the rescue changed: the
// rows that carry the error it wrote.
func (q *Queue) Rescue(ctx context.Context, c *pgx.Conn) (ids []int64, err error) {
	horizon := time.Now().Add(-Horizon)
	var stuck []*rivertype.JobRow
	if err := q.exec(ctx, c, func(exec riverdriver.ExecutorTx) (err error) {
		stuck, err = exec.JobGetStuck(ctx, &riverdriver.JobGetStuckParams{Max: 1000, StuckHorizon: horizon})
		return err
	}); err != nil || len(stuck) == 0 {
		return nil, err
	}
	now := time.Now().UTC().Truncate(time.Microsecond) // as the database keeps it, to find it again
	p := riverdriver.JobRescueManyParams{StuckHorizon: horizon}
	for _, j := range stuck {
		e, err := json.Marshal(rivertype.AttemptError{At: now, Attempt: max(j.Attempt, 0), Error: "Stuck job rescued by JobRescuer"})
		if err != nil {
			return nil, err
		}
		p.ID, p.Error = append(p.ID, j.ID), append(p.Error, e)
		p.FinalizedAt, p.ScheduledAt = append(p.FinalizedAt, nil), append(p.ScheduledAt, now)
		p.State = append(p.State, string(rivertype.JobStateRetryable))
	}
	err = q.exec(ctx, c, func(exec riverdriver.ExecutorTx) error {
		if _, err := exec.JobRescueMany(ctx, &p); err != nil {
			return err
		}
		rows, _ := c.Query(ctx, `SELECT id FROM river_job WHERE id = ANY($1)
			AND (errors[cardinality(errors)]->>'at')::timestamptz = $2 ORDER BY id`, p.ID, now)
		ids, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		return err
	})
	if err != nil {
		return nil, err
	}
	return ids, q.exec(ctx, c, func(exec riverdriver.ExecutorTx) error {
		_, err := exec.JobSchedule(ctx, &riverdriver.JobScheduleParams{Max: 1000})
		return err
	})
}

// Expire is the test hook: it moves the attempt's start past the rescue horizon, River's own
// measure of a stuck job.
func (q *Queue) Expire(ctx context.Context, c *pgx.Conn, id int64) error {
	_, err := c.Exec(ctx, `UPDATE river_job SET attempted_at = clock_timestamp() - $2::interval
		WHERE id = $1 AND state = 'running'`, id, 2*Horizon)
	return err
}

// Lock row-locks a job, as another session's update of it would.
func (q *Queue) Lock(ctx context.Context, c *pgx.Conn, id int64) error {
	_, err := c.Exec(ctx, `SELECT 1 FROM river_job WHERE id = $1 FOR UPDATE`, id)
	return err
}

// Snapshot reads River's states as the model's: available, scheduled and retryable are ready
// (a retryable job is due at once under the rescuer's policy); completed is done; discarded
// and cancelled are dead.
func (q *Queue) Snapshot(ctx context.Context, c *pgx.Conn) ([]model.Row, error) {
	rows, _ := c.Query(ctx, `SELECT id,
		CASE state WHEN 'running' THEN 'running' WHEN 'completed' THEN 'done'
		  WHEN 'discarded' THEN 'dead' WHEN 'cancelled' THEN 'dead' ELSE 'ready' END,
		attempt, coalesce(attempted_at > clock_timestamp() - $1::interval, false)
		FROM river_job ORDER BY id`, Horizon)
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (model.Row, error) {
		var r model.Row
		var state string
		err := row.Scan(&r.ID, &state, &r.Generation, &r.LeaseLive)
		r.State = model.State(state)
		return r, err
	})
}

// exec runs one executor call in a transaction of its own on the session's connection, as
// River's services run each call on a pooled connection.
func (q *Queue) exec(ctx context.Context, c *pgx.Conn, call func(riverdriver.ExecutorTx) error) error {
	return inTx(ctx, c, func(tx pgx.Tx) error { return call(q.driver.UnwrapExecutor(tx)) })
}

// inTx runs f in a transaction: its own, or the one the session has open, as a River user runs
// River's transactional calls (InsertTx, JobCompleteTx) inside a transaction of their own.
func inTx(ctx context.Context, c *pgx.Conn, f func(pgx.Tx) error) error {
	if c.PgConn().TxStatus() != 'I' {
		return f(openTx{c})
	}
	tx, err := c.Begin(ctx)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		_ = tx.Rollback(ctx)
		return err
	}
	return tx.Commit(ctx)
}

// openTx is the transaction the session has open, as River's calls take one: its end is the
// session's to decide, not the call's.
type openTx struct{ c *pgx.Conn }

var errNested = errors.New("riverq: a nested transaction inside the session's")

func (t openTx) Begin(context.Context) (pgx.Tx, error) { return nil, errNested }
func (t openTx) Commit(context.Context) error          { return nil }
func (t openTx) Rollback(context.Context) error        { return nil }
func (t openTx) LargeObjects() pgx.LargeObjects        { return pgx.LargeObjects{} }
func (t openTx) Conn() *pgx.Conn                       { return t.c }
func (t openTx) CopyFrom(ctx context.Context, name pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	return t.c.CopyFrom(ctx, name, cols, src)
}
func (t openTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	return t.c.SendBatch(ctx, b)
}
func (t openTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	return t.c.Prepare(ctx, name, sql)
}
func (t openTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return t.c.Exec(ctx, sql, args...)
}
func (t openTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return t.c.Query(ctx, sql, args...)
}
func (t openTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return t.c.QueryRow(ctx, sql, args...)
}
