// Command worker is neoq's program for the deployment mode (internal/deploy, the worker
// protocol of docs/deploy.md): neoq's own postgres backend as its users run it, its handler
// started on a queue with Start. neoq runs a handler inside the transaction that holds the
// job's row, and commits its status after the handler returns; that transaction is neoq's own
// (not reachable through its API), so the handler writes the job's business effect to the
// run's HTTP destination, as a handler with an effect outside the database does. The setup is
// neoq's own migration, run when a backend starts; the enqueuer is Enqueue.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/acaloiaro/neoq"
	"github.com/acaloiaro/neoq/backends/postgres"
	"github.com/acaloiaro/neoq/handler"
	"github.com/acaloiaro/neoq/jobs"
	"github.com/acaloiaro/neoq/logging"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgqcheck/pgqcheck/internal/deploy/protocol"
	"github.com/pgqcheck/pgqcheck/internal/effectdest"
)

// Version is the neoq release this module pins.
const Version = "v0.72.2"

const queue = "pgqcheck"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

func run() error {
	cfg, err := protocol.FromEnv()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// The program's own reports (clock readings, snapshots) go through a pool of its own:
	// neoq's handlers run side by side.
	c, err := pgxpool.New(ctx, cfg.DSN)
	if err != nil {
		return fmt.Errorf("pgqcheck neoq worker: %v", err)
	}
	defer c.Close()
	p := &program{cfg: cfg, c: c}
	if cfg.Role == protocol.RoleSnapshot {
		if p.log, err = protocol.Open(cfg, "neoq "+Version); err != nil {
			return err
		}
		defer p.log.Close()
		return p.snapshot(ctx)
	}
	// A backend runs neoq's migrations as it starts: the setup role is a backend started and
	// shut down.
	poll := time.Duration(max(cfg.Settings["pending_check_ms"], 1)) * time.Millisecond
	nq, err := neoq.New(ctx, neoq.WithBackend(postgres.Backend), postgres.WithConnectionString(cfg.DSN),
		neoq.WithPendingJobCheckInterval(poll), neoq.WithLogLevel(logging.LogLevelError))
	if err != nil {
		return fmt.Errorf("pgqcheck neoq worker: neoq's backend: %v", err)
	}
	if cfg.Role == protocol.RoleSetup {
		nq.Shutdown(ctx)
		return nil
	}
	if p.log, err = protocol.Open(cfg, "neoq "+Version); err != nil {
		return err
	}
	defer p.log.Close()
	if cfg.Role == protocol.RoleEnqueue {
		err = p.enqueue(ctx, nq)
		nq.Shutdown(context.Background())
		return err
	}
	return p.work(ctx, nq)
}

type program struct {
	cfg protocol.Config
	c   *pgxpool.Pool
	log *protocol.Log
}

// clock reads the database's clock on the program's own connection (a report, not neoq's
// work), across a cut or a restart; the zero time when the database stays out of reach.
func (p *program) clock() time.Time {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		var t time.Time
		err := p.c.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&t)
		cancel()
		if err == nil {
			p.log.Saw(t)
			return t
		}
	}
	return time.Time{}
}

func (p *program) enqueue(ctx context.Context, nq neoq.Neoq) error {
	jobsOf, err := protocol.ReadWorkload(p.cfg.Workload)
	if err != nil {
		return err
	}
	start := time.Now()
	for _, j := range jobsOf {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Until(start.Add(time.Duration(j.AtMS) * time.Millisecond))):
		}
		delay := time.Duration(j.DelayMS) * time.Millisecond
		from := p.clock()
		seq, _ := p.log.SendEnqueue(j.Payload(), delay)
		job := &jobs.Job{Queue: queue, Payload: map[string]any{"key": j.Key}}
		if delay > 0 {
			job.RunAfter = time.Now().Add(delay)
		}
		id, err := nq.Enqueue(context.Background(), job)
		ans := protocol.Event{From: protocol.Micros(from), Payload: j.Payload()}
		if err == nil {
			ans.Job, err = strconv.ParseInt(id, 10, 64)
		}
		if err != nil {
			ans.Err, ans.Lost = err.Error(), true
		} else {
			ans.To = protocol.Micros(p.clock())
		}
		_ = p.log.Answer(seq, protocol.OpEnqueue, ans)
	}
	return nil
}

// work starts the handler on the queue and runs until SIGTERM.
func (p *program) work(ctx context.Context, nq neoq.Neoq) error {
	h := handler.New(queue, p.handle, handler.JobTimeout(time.Duration(max(p.cfg.Settings["job_timeout_ms"], 1))*time.Millisecond),
		handler.Concurrency(int(max(p.cfg.Settings["concurrency"], 1))))
	if err := nq.Start(ctx, h); err != nil {
		return fmt.Errorf("pgqcheck neoq worker: starting the handler: %v", err)
	}
	<-ctx.Done()
	nq.Shutdown(context.Background())
	return nil
}

// handle is the user's handler: work, then the effect at the run's destination. neoq commits
// the job's status after it returns, in its own transaction: whether that commit happened the
// handler cannot see, so the completion is reported sent and never answered (its outcome is
// unknown), and the end as returned.
func (p *program) handle(ctx context.Context) error {
	j, err := jobs.FromContext(ctx)
	if err != nil {
		return err
	}
	attempt := int64(j.Retries) + 1
	_ = p.log.Start(j.ID, attempt, p.clock(), time.Time{})
	wctx := ctx
	if p.cfg.IgnoreContext {
		wctx = context.WithoutCancel(ctx)
	}
	select {
	case <-time.After(protocol.WorkFor(p.cfg.Seed, j.ID, attempt, p.cfg.WorkMS[0], p.cfg.WorkMS[1])):
	case <-wctx.Done():
		_ = p.log.End(j.ID, attempt, p.clock(), protocol.ResultCancelled)
		return wctx.Err()
	}
	if url := p.cfg.EffectURL; url != "" {
		if _, err := effectdest.Send(wctx, url, effectdest.Call{Job: j.ID, Fence: attempt, Key: effectdest.KeyOf(j.ID)}); err != nil {
			_ = p.log.End(j.ID, attempt, p.clock(), protocol.ResultFailed)
			return err
		}
	}
	_, _ = p.log.Send(protocol.OpComplete, j.ID, attempt)
	_ = p.log.End(j.ID, attempt, p.clock(), protocol.ResultReturned)
	return nil
}

// snapshot reports every job: neoq keeps processed ones, and moves those out of retries to its
// dead jobs. A job whose row a handler's transaction holds is running.
func (p *program) snapshot(ctx context.Context) error {
	from := p.clock()
	var evs []protocol.Event
	rows, err := p.c.Query(ctx, `SELECT id, status::text, retries FROM neoq_jobs UNION ALL SELECT id, 'dead', retries FROM neoq_dead_jobs ORDER BY 1`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id, retries int64
		var status string
		if err := rows.Scan(&id, &status, &retries); err != nil {
			return err
		}
		st := map[string]string{"new": "ready", "failed": "ready", "processed": "done", "dead": "dead"}[status]
		if st == "" {
			return fmt.Errorf("pgqcheck neoq worker: job %d has status %q, which this program does not know", id, status)
		}
		evs = append(evs, protocol.Event{Ev: protocol.EvObserve, Job: id, State: st, Attempts: retries})
	}
	if err := rows.Err(); err != nil {
		return err
	}
	free, err := p.free(ctx)
	if err != nil {
		return err
	}
	to := p.clock()
	for _, e := range evs {
		if e.State == "ready" && !free[e.Job] {
			e.State, e.Live = "running", true
		}
		e.From, e.To = protocol.Micros(from), protocol.Micros(to)
		if err := p.log.Event(e); err != nil {
			return err
		}
	}
	return nil
}

// free are the jobs no transaction holds locked, found by locking them for an instant.
func (p *program) free(ctx context.Context) (map[int64]bool, error) {
	tx, err := p.c.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.Background())
	rows, err := tx.Query(ctx, `SELECT id FROM neoq_jobs FOR UPDATE SKIP LOCKED`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out[id] = true
	}
	return out, rows.Err()
}
