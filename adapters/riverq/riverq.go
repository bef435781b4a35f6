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
	"os/exec"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// Horizon is the rescuer's RescueStuckJobsAfter: a running job whose attempt began longer ago
// is stuck, and the rescuer retries it. River's default is an hour; a second keeps runs short
// and is what the model judges each claim's lease by.
const Horizon = time.Second

// The lifecycle a River user configures, as the model judges it: each job may have
// MaxAttempts attempts, counted at each fetch (River's attempt column); a failed attempt is
// retried Backoff·2^(attempt-1) later by RetryPolicy, or discarded once its attempts ran out; a
// stuck job the rescuer finds is retried after the same backoff, or discarded at its last
// attempt. River's default policy waits attempt^4 seconds; a shorter one keeps runs short.
const (
	MaxAttempts = 2
	Backoff     = 200 * time.Millisecond
)

// SchedulerInterval is River's default (JobSchedulerIntervalDefault): the executor makes a
// failed job available at once where its retry is due within it, and the scheduler looks this
// far ahead.
const SchedulerInterval = 5 * time.Second

// RetryPolicy is the river.ClientRetryPolicy the adapter's executor and rescuer use.
type RetryPolicy struct{}

// NextRetry is Backoff doubled for each attempt before the job's last.
func (RetryPolicy) NextRetry(job *rivertype.JobRow) time.Time {
	return time.Now().Add(Backoff << max(job.Attempt-1, 0))
}

var _ river.ClientRetryPolicy = RetryPolicy{}

// Fetch is the producer's fetch of one available job for the named client: the executor's
// JobGetAvailable, whose result type differs between River versions.
type Fetch func(ctx context.Context, exec riverdriver.Executor, params *riverdriver.JobGetAvailableParams) ([]*rivertype.JobRow, error)

// Promises is what River promises, as the model judges it (v0.47.0 to v0.51.2; the doc of
// Config.RescueStuckJobsAfter in client.go, and the executor's completion): a job running longer
// than RescueStuckJobsAfter is rescued and retried, which "can result in repeat or duplicate
// execution" of a job still being worked, so a replaced worker may still run; a completion
// sets a running job's state by id, with no attempt to compare, so a replaced worker's
// completion is not refused (fencing is not promised), nor is its report of a failed attempt,
// which sets the state by id on a running row in the same way; completed is final (done once,
// done terminal); claims take jobs by priority and scheduled time, not by id; a failed job is
// retried at the time its retry policy gives until its max attempts, then discarded, and a
// cancelled one is not retried; a rescued job is retried or discarded the same way (the doc of
// InsertOpts.MaxAttempts, ClientRetryPolicy and JobCancel); a job inserted with a scheduled
// time is not worked before it (InsertOpts.ScheduledAt). River promises nothing of its own steps
// waiting for a row lock (its rescuer's update of a stuck job waits for one a worker's
// transaction holds): skip-don't-wait is measured, not promised.
var Promises = sut.Declared{
	Order: model.Any,
	Shape: model.Shape{RescueOnly: true, Unfenced: true, Waits: true, Life: model.Lifecycle{
		MaxAttempts: MaxAttempts, Backoff: Backoff, Factor: 2,
		AttemptsAtClaim: true, LapsesCount: true, RescueBackoff: true}},
	FixedLease:        Horizon,
	ClaimsOutsideTxns: true,
}

// Register registers River under "river-<version>", the version the calling module's go.mod
// pins (each version's module checks the two agree: TestRiverVersionsAgree, CheckVersions).
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
	return q.insert(ctx, c, payload, &river.InsertOpts{MaxAttempts: MaxAttempts})
}

// insert is River's client inserting one job, in a transaction of the session's.
func (q *Queue) insert(ctx context.Context, c *pgx.Conn, payload string, opts *river.InsertOpts) (id int64, err error) {
	err = inTx(ctx, c, func(tx pgx.Tx) error {
		res, err := q.client.InsertTx(ctx, tx, args{Payload: json.RawMessage(payload)}, opts)
		if err == nil {
			id = res.Job.ID
		}
		return err
	})
	return id, err
}

// EnqueueAt inserts a job due delay from now (InsertOpts.ScheduledAt), which River inserts as
// scheduled, and then runs the scheduler's step, as River's leader does on its next run: a job
// due within the scheduler's interval is made available, and the producer's fetch takes it
// once its scheduled time has come. A deployment's leader runs that step up to an interval
// later, so a job may there wait past its time; the model's due job is claimable at its time,
// and judges River as though the step ran at once.
func (q *Queue) EnqueueAt(ctx context.Context, c *pgx.Conn, payload string, delay time.Duration) (id int64, err error) {
	id, err = q.insert(ctx, c, payload, &river.InsertOpts{MaxAttempts: MaxAttempts, ScheduledAt: time.Now().Add(delay)})
	if err != nil {
		return id, err
	}
	return id, q.schedule(ctx, c)
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
	finalized := now()
	return q.setState(ctx, c, riverdriver.JobSetStateCompleted(id, finalized, nil), func(j *rivertype.JobRow) bool {
		return j.State == rivertype.JobStateCompleted && j.FinalizedAt != nil && j.FinalizedAt.Equal(finalized)
	})
}

// Fail is the job executor's report of a failed attempt (internal/jobexecutor; not reachable
// through River's client API), decided as River decides it for the job row the worker holds,
// whose attempt is gen: a worker's error wrapped in river.JobCancel (the model's failure for
// good) cancels the job; at its last attempt the job is discarded; otherwise it is retried at
// RetryPolicy's time, made available at once where that is within the scheduler's interval,
// retryable otherwise. The attempt error's time is this call's (River writes the attempt's
// start), by which the row it changed is found again.
func (q *Queue) Fail(ctx context.Context, c *pgx.Conn, id, gen int64, retryable bool, text string) (rows int64, err error) {
	at := now()
	werr := errors.New(text)
	if !retryable {
		werr = river.JobCancel(werr)
	}
	errData, err := json.Marshal(rivertype.AttemptError{At: at, Attempt: int(gen), Error: werr.Error()})
	if err != nil {
		return 0, err
	}
	job := &rivertype.JobRow{ID: id, Attempt: int(gen), MaxAttempts: MaxAttempts, AttemptedAt: &at}
	var p *riverdriver.JobSetStateIfRunningParams
	switch next := (RetryPolicy{}).NextRetry(job); {
	case !retryable:
		p = riverdriver.JobSetStateCancelled(id, at, errData, nil)
	case job.Attempt >= job.MaxAttempts:
		p = riverdriver.JobSetStateDiscarded(id, at, errData, nil)
	case time.Until(next) <= SchedulerInterval:
		p = riverdriver.JobSetStateErrorAvailable(id, next, errData, nil)
	default:
		p = riverdriver.JobSetStateErrorRetryable(id, next, errData, nil)
	}
	return q.setState(ctx, c, p, func(j *rivertype.JobRow) bool {
		n := len(j.Errors)
		return n > 0 && j.Errors[n-1].At.Equal(at)
	})
}

// setState is the completer's JobSetStateIfRunningMany for one job, counting the row changed
// where the answer's row shows what this call wrote.
func (q *Queue) setState(ctx context.Context, c *pgx.Conn, p *riverdriver.JobSetStateIfRunningParams, wrote func(*rivertype.JobRow) bool) (rows int64, err error) {
	err = q.exec(ctx, c, func(exec riverdriver.ExecutorTx) error {
		jobs, err := exec.JobSetStateIfRunningMany(ctx, &riverdriver.JobSetStateIfRunningManyParams{
			ID: []int64{p.ID}, Attempt: []*int{p.Attempt}, ErrData: [][]byte{p.ErrData},
			FinalizedAt: []*time.Time{p.FinalizedAt}, MetadataDoMerge: []bool{p.MetadataDoMerge},
			MetadataUpdates: [][]byte{p.MetadataUpdates}, ScheduledAt: []*time.Time{p.ScheduledAt},
			State: []rivertype.JobState{p.State}})
		if err != nil {
			return err
		}
		for _, j := range jobs {
			if j.ID == p.ID && wrote(j) {
				rows++
			}
		}
		return nil
	})
	return rows, err
}

// now is the time as the database keeps it, to find a row again by a time written into it.
func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// Rescue is River's leader running its rescuer and then its scheduler, each through the
// executor calls and parameters of River's own services (internal/maintenance): a stuck job is
// retried at RetryPolicy's time while it has attempts left, else discarded; the scheduler then
// makes available the retryable jobs due within its interval, as River's looks ahead. Its
// answer is the jobs the rescue changed: the rows that carry the error it wrote.
func (q *Queue) Rescue(ctx context.Context, c *pgx.Conn) (ids []int64, err error) {
	horizon := time.Now().Add(-Horizon)
	var stuck []*rivertype.JobRow
	if err := q.exec(ctx, c, func(exec riverdriver.ExecutorTx) (err error) {
		stuck, err = exec.JobGetStuck(ctx, &riverdriver.JobGetStuckParams{Max: 1000, StuckHorizon: horizon})
		return err
	}); err != nil || len(stuck) == 0 {
		return nil, err
	}
	at := now()
	p := riverdriver.JobRescueManyParams{StuckHorizon: horizon}
	for _, j := range stuck {
		e, err := json.Marshal(rivertype.AttemptError{At: at, Attempt: max(j.Attempt, 0), Error: rescueError})
		if err != nil {
			return nil, err
		}
		state, finalized, scheduled := rivertype.JobStateRetryable, (*time.Time)(nil), RetryPolicy{}.NextRetry(j)
		if j.Attempt >= max(j.MaxAttempts, 0) {
			state, finalized, scheduled = rivertype.JobStateDiscarded, &at, j.ScheduledAt
		}
		p.ID, p.Error = append(p.ID, j.ID), append(p.Error, e)
		p.FinalizedAt, p.ScheduledAt = append(p.FinalizedAt, finalized), append(p.ScheduledAt, scheduled)
		p.State = append(p.State, string(state))
	}
	err = q.exec(ctx, c, func(exec riverdriver.ExecutorTx) error {
		if _, err := exec.JobRescueMany(ctx, &p); err != nil {
			return err
		}
		rows, _ := c.Query(ctx, `SELECT id FROM river_job WHERE id = ANY($1)
			AND (errors[cardinality(errors)]->>'at')::timestamptz = $2 ORDER BY id`, p.ID, at)
		ids, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		return err
	})
	if err != nil {
		return nil, err
	}
	return ids, q.schedule(ctx, c)
}

// schedule is the scheduler's step (internal/maintenance's JobScheduler): the scheduled and
// retryable jobs due within its interval are made available.
func (q *Queue) schedule(ctx context.Context, c *pgx.Conn) error {
	return q.exec(ctx, c, func(exec riverdriver.ExecutorTx) error {
		ahead := time.Now().Add(SchedulerInterval)
		_, err := exec.JobSchedule(ctx, &riverdriver.JobScheduleParams{Max: 1000, Now: &ahead})
		return err
	})
}

// rescueError is the error River's rescuer writes into a stuck job.
const rescueError = "Stuck job rescued by JobRescuer"

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
// (a retryable job is due at its scheduled time, which the scheduler looks ahead to); completed
// is done; discarded and cancelled are dead. A job's attempts are River's attempt, and the
// error it keeps is the last a worker reported (the rescuer's are River's notes), as its worker
// gave it (a cancel's without the text river.JobCancel adds).
func (q *Queue) Snapshot(ctx context.Context, c *pgx.Conn) ([]model.Row, error) {
	rows, _ := c.Query(ctx, `SELECT id,
		CASE state WHEN 'running' THEN 'running' WHEN 'completed' THEN 'done'
		  WHEN 'discarded' THEN 'dead' WHEN 'cancelled' THEN 'dead' ELSE 'ready' END,
		attempt, coalesce(attempted_at > clock_timestamp() - $1::interval, false),
		coalesce((SELECT e->>'error' FROM unnest(errors) WITH ORDINALITY AS u(e, n)
		  WHERE e->>'error' <> $2 ORDER BY n DESC LIMIT 1), '')
		FROM river_job ORDER BY id`, Horizon, rescueError)
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (model.Row, error) {
		var r model.Row
		var state string
		err := row.Scan(&r.ID, &state, &r.Generation, &r.LeaseLive, &r.Kept)
		r.State, r.Attempts = model.State(state), r.Generation
		r.Kept = strings.TrimPrefix(r.Kept, cancelPrefix)
		return r, err
	})
}

// cancelPrefix is what river.JobCancel's error adds before its worker's error text.
var cancelPrefix = strings.TrimSuffix(river.JobCancel(errors.New("|")).Error(), "|")

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

// riverModules are the River modules a registered version is built of: the client, its pgx
// driver, the driver interface and the types, released together under one version.
var riverModules = []string{"github.com/riverqueue/river", "github.com/riverqueue/river/riverdriver",
	"github.com/riverqueue/river/riverdriver/riverpgxv5", "github.com/riverqueue/river/rivertype"}

// CheckVersions reports, in one line, every River module the calling module selects at another
// version than the one it registers (Register's version): a module whose go.mod pins the driver
// at one River and the client at another would judge neither. It asks the go command, from
// the working directory's module (a test's package folder), for the versions the build selects.
func CheckVersions(version string) error {
	out, err := exec.Command("go", append([]string{"list", "-m", "-f", "{{.Path}} {{.Version}}"}, riverModules...)...).Output()
	if err != nil {
		return fmt.Errorf("riverq: listing River's modules: %v", err)
	}
	var bad []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(line); len(f) != 2 || f[1] != version {
			bad = append(bad, fmt.Sprintf("%s, registered as %s", line, version))
		}
	}
	if len(bad) > 0 {
		return errors.New("riverq: " + strings.Join(bad, "; "))
	}
	return nil
}
