package riverworker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/pgqcheck/pgqcheck/internal/deploy/protocol"
)

// work runs River's client until SIGTERM, then stops it as River's users do: Stop waits for
// the jobs in hand to finish.
func (p *program) work(ctx context.Context) error {
	workers := river.NewWorkers()
	river.AddWorker(workers, &handler{p: p})
	cfg := &river.Config{
		Queues:               map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: int(max(p.setting(SettingMaxWorkers), 1))}},
		Workers:              workers,
		JobTimeout:           p.ms(SettingJobTimeout),
		RescueStuckJobsAfter: p.ms(SettingRescueAfter),
		MaxAttempts:          int(p.setting(SettingMaxAttempts)),
		FetchPollInterval:    p.ms(SettingFetchPoll),
	}
	if cfg.FetchPollInterval > 0 && cfg.FetchPollInterval < river.FetchCooldownDefault {
		cfg.FetchCooldown = cfg.FetchPollInterval
	}
	if b := p.ms(SettingBackoff); b > 0 {
		cfg.RetryPolicy = doubling{b}
	}
	client, err := river.NewClient(riverpgxv5.New(p.pool), cfg)
	if err != nil {
		return fmt.Errorf("pgqcheck river worker: River refuses the settings %s: %v", marshal(p.cfg.Settings), err)
	}
	if err := client.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("pgqcheck river worker: starting the client: %v", err)
	}
	<-ctx.Done()
	stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return client.Stop(stop)
}

// doubling is a user's retry policy: Backoff after the first attempt, doubled for each one
// after.
type doubling struct{ backoff time.Duration }

func (d doubling) NextRetry(job *rivertype.JobRow) time.Time {
	return time.Now().Add(d.backoff << max(job.Attempt-1, 0))
}

// handler is the user's worker: it works for the time the run's seed draws (on its context,
// unless the deployment says it ignores it), fails the attempts the workload draws, then
// writes the job's business effect and completes the job in one transaction (JobCompleteTx).
// A transaction that did not commit is the handler's error, so that River retries the job; one
// that committed, or a job River says is no longer running, ends it with nil.
type handler struct {
	river.WorkerDefaults[Args]
	p *program
}

func (h *handler) Work(ctx context.Context, job *river.Job[Args]) error {
	p := h.p
	attempt := int64(job.Attempt)
	var claimed time.Time
	if job.AttemptedAt != nil {
		claimed = *job.AttemptedAt
	}
	_ = p.log.Start(job.ID, attempt, p.clock(), claimed)
	wctx := ctx
	if p.cfg.IgnoreContext {
		wctx = context.WithoutCancel(ctx)
	}
	select {
	case <-time.After(protocol.WorkFor(p.cfg.Seed, job.ID, attempt, p.cfg.WorkMS[0], p.cfg.WorkMS[1])):
	case <-wctx.Done():
		_ = p.log.End(job.ID, attempt, p.clock(), protocol.ResultCancelled)
		return wctx.Err()
	}
	if attempt <= job.Args.FailAttempts {
		_ = p.log.End(job.ID, attempt, p.clock(), protocol.ResultFailed)
		return errDrawn
	}
	seq, _ := p.log.Send(protocol.OpComplete, job.ID, attempt)
	from := p.clock()
	err := h.complete(wctx, job)
	ans := protocol.Event{From: protocol.Micros(from), Job: job.ID, Gen: attempt}
	result := protocol.ResultDone
	var late *beforeCommit
	switch {
	case err == nil:
		ans.Rows = 1
	case errors.Is(err, rivertype.ErrNotFound):
		result = protocol.ResultRefused
	case errors.As(err, &late):
		// Nothing committed: the transaction failed before its COMMIT (its context ended: a
		// job timeout), and was rolled back.
		ans.Err, ans.Unsent, result = err.Error(), true, protocol.ResultCancelled
	default:
		// The transaction's end is not known: its COMMIT may have been lost on the way back.
		ans.Err, ans.Lost, result = err.Error(), true, protocol.ResultFailed
	}
	to := p.clock()
	if !ans.Lost {
		ans.To = protocol.Micros(to)
	}
	_ = p.log.Answer(seq, protocol.OpComplete, ans)
	_ = p.log.End(job.ID, attempt, to, result)
	if result == protocol.ResultDone || result == protocol.ResultRefused {
		return nil
	}
	return err
}

// complete writes the effect and completes the job in one transaction; ErrNotFound when
// River's completion found the job no longer running (the transaction is rolled back, and the
// effect with it).
func (h *handler) complete(ctx context.Context, job *river.Job[Args]) error {
	tx, err := h.p.pool.Begin(ctx)
	if err != nil {
		return &beforeCommit{err}
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, "INSERT INTO pgqcheck_effects (job, attempt, pid) VALUES ($1, $2, $3)", job.ID, job.Attempt, os.Getpid()); err != nil {
		return &beforeCommit{err}
	}
	if _, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, pgx.Tx(tx), job); err != nil {
		if errors.Is(err, rivertype.ErrNotFound) {
			return err
		}
		return &beforeCommit{err}
	}
	return tx.Commit(ctx)
}

// beforeCommit is a completion's transaction that failed before its COMMIT was sent: it
// changed nothing.
type beforeCommit struct{ err error }

func (e *beforeCommit) Error() string { return e.err.Error() }
func (e *beforeCommit) Unwrap() error { return e.err }
