// Package riverworker is River's program for the deployment mode (internal/deploy, the worker
// protocol of docs/deploy.md): River's own client, with its producer, completer, leader,
// rescuer and scheduler, and the settings a user gives it. As a worker it runs river.Client
// with a handler that reports each execution and writes the job's business effect with
// JobCompleteTx, in one transaction; as an enqueuer it inserts with the client's Insert; its
// setup is River's migrator. A module per River version builds it with that version (a main
// package calling Main).
package riverworker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/pgqcheck/pgqcheck/internal/deploy/protocol"
)

// Settings are the River settings a deployment names (protocol.Config.Settings); an unset
// one is River's default.
const (
	SettingRescueAfter = "rescue_after_ms" // Config.RescueStuckJobsAfter
	SettingJobTimeout  = "job_timeout_ms"  // Config.JobTimeout
	SettingMaxAttempts = "max_attempts"    // Config.MaxAttempts
	SettingBackoff     = "backoff_ms"      // a retry policy of Backoff·2^(attempt-1), in place of River's attempt^4 s
	SettingMaxWorkers  = "max_workers"     // the default queue's MaxWorkers
	SettingFetchPoll   = "fetch_poll_ms"   // Config.FetchPollInterval
)

// Main runs the program in the role its configuration names, for River version.
func Main(version string) {
	if err := run(version); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

func run(version string) error {
	cfg, err := protocol.FromEnv()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	pool, err := pgxpool.New(ctx, cfg.DSN)
	if err != nil {
		return fmt.Errorf("pgqcheck river worker: %v", err)
	}
	defer pool.Close()
	if cfg.Role == protocol.RoleSetup {
		return setup(ctx, pool)
	}
	log, err := protocol.Open(cfg, "River "+version)
	if err != nil {
		return err
	}
	defer log.Close()
	p := &program{cfg: cfg, pool: pool, log: log}
	switch cfg.Role {
	case protocol.RoleEnqueue:
		return p.enqueue(ctx)
	case protocol.RoleSnapshot:
		return p.snapshot(ctx)
	}
	return p.work(ctx)
}

// effectsTable is the business table: one row per effect a completion committed.
const effectsTable = `CREATE TABLE pgqcheck_effects (job bigint NOT NULL, attempt int NOT NULL, pid int NOT NULL,
	at timestamptz NOT NULL DEFAULT clock_timestamp())`

// setup runs River's migrations as its users do, and creates the business table.
func setup(ctx context.Context, pool *pgxpool.Pool) error {
	m, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("pgqcheck river worker: migrating: %v", err)
	}
	_, err = pool.Exec(ctx, effectsTable)
	return err
}

// program is one process of River's program.
type program struct {
	cfg  protocol.Config
	pool *pgxpool.Pool
	log  *protocol.Log
}

func (p *program) setting(name string) int64 { return p.cfg.Settings[name] }

func (p *program) ms(name string) time.Duration {
	return time.Duration(p.setting(name)) * time.Millisecond
}

// Args is the job's arguments, as a River user's JobArgs: the workload's key, and how many of
// its first attempts the handler fails.
type Args struct {
	Key          string `json:"key"`
	FailAttempts int64  `json:"fail_attempts,omitempty"`
}

func (Args) Kind() string { return "pgqcheck" }

// clockFor bounds how long the handler keeps trying to read the database's clock, across a cut
// or a restart.
const clockFor = 10 * time.Second

// clock reads the database's clock_timestamp() on the pool, whatever the handler's context
// says (a report is not the handler's work); the zero time when the database stays out of
// reach.
func (p *program) clock() time.Time {
	deadline := time.Now().Add(clockFor)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		var t time.Time
		err := p.pool.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&t)
		cancel()
		if err == nil {
			p.log.Saw(t)
			return t
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Time{}
}

// enqueue inserts the workload with River's client, each job at its time, between two clock
// readings.
func (p *program) enqueue(ctx context.Context) error {
	jobs, err := protocol.ReadWorkload(p.cfg.Workload)
	if err != nil {
		return err
	}
	client, err := river.NewClient(riverpgxv5.New(p.pool), &river.Config{})
	if err != nil {
		return err
	}
	start := time.Now()
	for _, j := range jobs {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Until(start.Add(time.Duration(j.AtMS) * time.Millisecond))):
		}
		delay := time.Duration(j.DelayMS) * time.Millisecond
		from := p.clock()
		seq, _ := p.log.SendEnqueue(j.Payload(), delay)
		// The run-at time counts from after the first reading, so that a job worked at its
		// time is worked no earlier than the reading plus its delay.
		opts := &river.InsertOpts{}
		if delay > 0 {
			opts.ScheduledAt = time.Now().Add(delay)
		}
		res, err := client.Insert(context.Background(), Args{Key: j.Key, FailAttempts: j.FailAttempts}, opts)
		ans := protocol.Event{From: protocol.Micros(from), Payload: j.Payload()}
		if err != nil {
			ans.Err, ans.Lost = err.Error(), true // the insert may have committed before its answer was lost
		} else {
			ans.Job = res.Job.ID
			ans.To = protocol.Micros(p.clock())
		}
		_ = p.log.Answer(seq, protocol.OpEnqueue, ans)
	}
	return nil
}

// states maps River's job states to the model's.
var states = map[rivertype.JobState]string{
	rivertype.JobStateAvailable: "ready", rivertype.JobStateScheduled: "ready", rivertype.JobStateRetryable: "ready",
	rivertype.JobStatePending: "ready", rivertype.JobStateRunning: "running", rivertype.JobStateCompleted: "done",
	rivertype.JobStateDiscarded: "dead", rivertype.JobStateCancelled: "dead",
}

// snapshot reports every job's row and its business effects.
func (p *program) snapshot(ctx context.Context) error {
	tx, err := p.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return err
	}
	defer tx.Rollback(context.Background())
	var from time.Time
	if err := tx.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&from); err != nil {
		return err
	}
	rows, err := tx.Query(ctx, "SELECT id, state, attempt FROM river_job ORDER BY id")
	if err != nil {
		return err
	}
	var evs []protocol.Event
	for rows.Next() {
		var id int64
		var state string
		var attempt int64
		if err := rows.Scan(&id, &state, &attempt); err != nil {
			return err
		}
		st, ok := states[rivertype.JobState(state)]
		if !ok {
			return fmt.Errorf("pgqcheck river worker: job %d is in state %q, which this program does not know", id, state)
		}
		evs = append(evs, protocol.Event{Ev: protocol.EvObserve, Job: id, State: st, Gen: attempt, Attempts: attempt, Live: st == "running"})
	}
	if err := rows.Err(); err != nil {
		return err
	}
	counts, err := tx.Query(ctx, "SELECT job, count(*) FROM pgqcheck_effects GROUP BY job ORDER BY job")
	if err != nil {
		return err
	}
	for counts.Next() {
		var e protocol.Event
		if err := counts.Scan(&e.Job, &e.Rows); err != nil {
			return err
		}
		e.Ev = protocol.EvEffects
		evs = append(evs, e)
	}
	if err := counts.Err(); err != nil {
		return err
	}
	var to time.Time
	if err := tx.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&to); err != nil {
		return err
	}
	for _, e := range evs {
		e.From, e.To = protocol.Micros(from), protocol.Micros(to)
		if err := p.log.Event(e); err != nil {
			return err
		}
	}
	return nil
}

// errDrawn is the failure the workload draws for a job's first attempts.
var errDrawn = errors.New("a failure the workload drew")

// marshal is a value as JSON, for a log line.
func marshal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
