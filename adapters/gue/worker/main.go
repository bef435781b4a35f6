// Command worker is gue's program for the deployment mode (internal/deploy, the worker
// protocol of docs/deploy.md): gue's own WorkerPool as its users run it. A job's handler works
// for the time the run's seed draws, then writes the job's business effect in the job's own
// transaction (Job.Tx) and completes it there (Job.Delete, then Job.Done, which commits both),
// so that the effect commits exactly when the completion does; gue's own Delete and Done after
// the handler returns are then no-ops. The setup is gue's migration, the enqueuer gue's
// Client.Enqueue.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/vgarvardt/gue/v5"
	"github.com/vgarvardt/gue/v5/adapter/pgxv5"

	gueadapter "github.com/pgqcheck/pgqcheck/adapters/gue"
	"github.com/pgqcheck/pgqcheck/internal/deploy/protocol"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

// jobType is the workload's jobs' type in gue's work map.
const jobType = "pgqcheck"

func run() error {
	cfg, err := protocol.FromEnv()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	pool, err := pgxpool.New(ctx, cfg.DSN)
	if err != nil {
		return fmt.Errorf("pgqcheck gue worker: %v", err)
	}
	defer pool.Close()
	if cfg.Role == protocol.RoleSetup {
		if _, err := pool.Exec(ctx, (&gueadapter.Queue{}).Schema()); err != nil {
			return fmt.Errorf("pgqcheck gue worker: gue's migration: %v", err)
		}
		_, err = pool.Exec(ctx, `CREATE TABLE pgqcheck_effects (job text NOT NULL, pid int NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())`)
		return err
	}
	log, err := protocol.Open(cfg, "gue "+gueadapter.Version)
	if err != nil {
		return err
	}
	defer log.Close()
	client, err := gue.NewClient(pgxv5.NewConnPool(pool), gue.WithClientBackoff(gue.NewConstantBackoff(gueadapter.Backoff)))
	if err != nil {
		return err
	}
	p := &program{cfg: cfg, pool: pool, log: log, client: client}
	switch cfg.Role {
	case protocol.RoleEnqueue:
		return p.enqueue(ctx)
	case protocol.RoleSnapshot:
		return p.snapshot(ctx)
	}
	return p.work(ctx)
}

type program struct {
	cfg    protocol.Config
	pool   *pgxpool.Pool
	log    *protocol.Log
	client *gue.Client
}

// clock reads the database's clock on the pool (a report, not the handler's work); the zero
// time when the database stays out of reach.
func (p *program) clock() time.Time {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		var t time.Time
		err := p.pool.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&t)
		cancel()
		if err == nil {
			p.log.Saw(t)
			return t
		}
	}
	return time.Time{}
}

// payload is a job's arguments, as the workload gives them.
type payload struct {
	Key string `json:"key"`
}

func (p *program) enqueue(ctx context.Context) error {
	jobs, err := protocol.ReadWorkload(p.cfg.Workload)
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
		args, _ := json.Marshal(payload{j.Key})
		job := &gue.Job{Type: jobType, Args: args}
		if delay > 0 {
			job.RunAt = time.Now().Add(delay)
		}
		err := p.client.Enqueue(context.Background(), job)
		ans := protocol.Event{From: protocol.Micros(from), Payload: j.Payload()}
		if err != nil {
			ans.Err, ans.Lost = err.Error(), true
		} else {
			ans.ID, ans.To = job.ID.String(), protocol.Micros(p.clock())
		}
		_ = p.log.Answer(seq, protocol.OpEnqueue, ans)
	}
	return nil
}

// snapshot reports every job left (gue deletes a done job) and every job's effects.
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
	var evs []protocol.Event
	rows, err := tx.Query(ctx, `SELECT job_id, error_count FROM gue_jobs ORDER BY job_id`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id string
		var errs int64
		if err := rows.Scan(&id, &errs); err != nil {
			return err
		}
		evs = append(evs, protocol.Event{Ev: protocol.EvObserve, ID: id, State: "ready", Attempts: errs})
	}
	if err := rows.Err(); err != nil {
		return err
	}
	// A job a worker holds is row-locked by its transaction: that is gue's lease. The rows
	// this snapshot can lock, for an instant, are the ones no worker holds.
	free := map[string]bool{}
	if err := freeJobs(ctx, p.pool, free); err != nil {
		return err
	}
	for i := range evs {
		if !free[evs[i].ID] {
			evs[i].State, evs[i].Live = "running", true
		}
	}
	counts, err := tx.Query(ctx, "SELECT job, count(*) FROM pgqcheck_effects GROUP BY job ORDER BY job")
	if err != nil {
		return err
	}
	for counts.Next() {
		var e protocol.Event
		if err := counts.Scan(&e.ID, &e.Rows); err != nil {
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

// work runs gue's WorkerPool until SIGTERM.
func (p *program) work(ctx context.Context) error {
	size := int(max(p.cfg.Settings["pool_size"], 1))
	pool, err := gue.NewWorkerPool(p.client, gue.WorkMap{jobType: p.handle}, size,
		gue.WithPoolPollInterval(p.cfg.Poll()), gue.WithPoolID(p.cfg.Worker))
	if err != nil {
		return err
	}
	return pool.Run(ctx)
}

// handle is the user's WorkFunc: work, then the effect and the completion in the job's
// transaction.
func (p *program) handle(ctx context.Context, j *gue.Job) error {
	id := j.ID.String()
	// gue counts failures, not attempts: this execution is the job's error_count+1st.
	attempt := int64(j.ErrorCount) + 1
	_ = p.log.StartID(id, attempt, p.clock(), time.Time{})
	wctx := ctx
	if p.cfg.IgnoreContext {
		wctx = context.WithoutCancel(ctx)
	}
	select {
	case <-time.After(protocol.WorkFor(p.cfg.Seed, workKey(id), attempt, p.cfg.WorkMS[0], p.cfg.WorkMS[1])):
	case <-wctx.Done():
		_ = p.log.EndID(id, attempt, p.clock(), protocol.ResultCancelled)
		return wctx.Err()
	}
	seq, _ := p.log.SendID(protocol.OpComplete, id, attempt)
	from := p.clock()
	err := complete(wctx, j)
	ans := protocol.Event{From: protocol.Micros(from), ID: id, Gen: attempt}
	result := protocol.ResultDone
	if err == nil {
		ans.Rows = 1
	} else {
		// A COMMIT that failed may still have committed; anything before it took no effect, but
		// which it was is not known from here.
		ans.Err, ans.Lost, result = err.Error(), true, protocol.ResultFailed
	}
	to := p.clock()
	if !ans.Lost {
		ans.To = protocol.Micros(to)
	}
	_ = p.log.Answer(seq, protocol.OpComplete, ans)
	_ = p.log.EndID(id, attempt, to, result)
	return err
}

// complete writes the effect and deletes the job in the job's transaction, then commits it.
func complete(ctx context.Context, j *gue.Job) error {
	if _, err := j.Tx().Exec(ctx, "INSERT INTO pgqcheck_effects (job, pid) VALUES ($1, $2)", j.ID.String(), os.Getpid()); err != nil {
		return err
	}
	if err := j.Delete(ctx); err != nil {
		return err
	}
	if err := j.Done(ctx); err != nil {
		return err
	}
	return nil
}

// freeJobs adds to free the jobs no transaction holds locked.
func freeJobs(ctx context.Context, pool *pgxpool.Pool, free map[string]bool) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.Background())
	rows, err := tx.Query(ctx, `SELECT job_id FROM gue_jobs FOR UPDATE SKIP LOCKED`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return err
		}
		free[id] = true
	}
	return rows.Err()
}

// workKey is the number a job's work is drawn by: its id, hashed.
func workKey(id string) int64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return int64(h.Sum64() >> 1)
}
