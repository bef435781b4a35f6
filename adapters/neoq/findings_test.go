package neoq

import (
	"context"
	"testing"
	"time"

	"github.com/acaloiaro/neoq/handler"
	"github.com/acaloiaro/neoq/jobs"
	"github.com/jackc/pgx/v5"
)

// What neoq does outside what the model judges, measured through its public API alone: each
// test asserts neoq's behaviour beside a control that differs in the one thing that causes it.

// migrated is a Queue installed on c's database, its enqueuing backend stopped when the test
// ends.
func migrated(t *testing.T, c *pgx.Conn) *Queue {
	t.Helper()
	q := &Queue{}
	if err := q.Migrate(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.stop(q.enq); q.stopping.Wait() })
	return q
}

// started starts a backend with a handler on queue that reports each job it is called with.
func started(t *testing.T, q *Queue, c *pgx.Conn, queue string) (*backend, <-chan int64) {
	t.Helper()
	b, err := newBackend(context.Background(), c, pollEvery)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.stop(b); q.stopping.Wait() })
	got := make(chan int64, 16)
	err = b.nq.Start(b.ctx, handler.New(queue, func(ctx context.Context) error {
		j, err := jobs.FromContext(ctx)
		if err == nil {
			got <- j.ID
		}
		return nil
	}, handler.Concurrency(1)))
	if err != nil {
		t.Fatal(err)
	}
	return b, got
}

// TestMaxRetriesKillsSuccess: a job enqueued with MaxRetries 0 whose handler succeeds is moved
// to neoq_dead_jobs, not marked processed: updateJob compares the retries with MaxRetries
// before it looks at the handler's result. (A job with MaxRetries n goes dead on its (n+1)-th
// run whatever that run's result.) Without MaxRetries it is processed.
func TestMaxRetriesKillsSuccess(t *testing.T) {
	zero := 0
	for _, tc := range []struct {
		name string
		max  *int
		want string
	}{{"no MaxRetries", nil, "processed"}, {"MaxRetries 0", &zero, "dead"}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c := database(t)
			q := migrated(t, c)
			b, got := started(t, q, c, queueName)
			if _, err := b.nq.Enqueue(ctx, &jobs.Job{Queue: queueName, Payload: map[string]any{"n": 1}, MaxRetries: tc.max}); err != nil {
				t.Fatal(err)
			}
			select {
			case <-got:
			case <-time.After(10 * time.Second):
				t.Fatal("the handler was not called within 10 s")
			}
			var state string
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				err := c.QueryRow(ctx, `SELECT coalesce((SELECT status::text FROM neoq_jobs WHERE status = 'processed'),
					(SELECT 'dead' FROM neoq_dead_jobs), '')`).Scan(&state)
				if err != nil {
					t.Fatal(err)
				}
				if state != "" || time.Now().After(deadline) {
					break
				}
			}
			if state != tc.want {
				t.Fatalf("a job whose handler returned nil, %s: %q, measured %q", tc.name, state, tc.want)
			}
		})
	}
}

// TestShutdownDeafensOthers: a backend's Shutdown announces job id -1 on each of its queues,
// and every other backend listening on that queue takes it for its own shutdown: its listener
// returns, and it runs no job of that queue again (its pending-job poll goes on announcing
// jobs nobody hears). A backend on another queue is not affected.
func TestShutdownDeafensOthers(t *testing.T) {
	for _, tc := range []struct {
		name      string
		stopQueue string
		runs      bool
	}{{"shut down on another queue", "elsewhere", true}, {"shut down on the same queue", queueName, false}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c := database(t)
			q := migrated(t, c)
			a, _ := started(t, q, c, tc.stopQueue)
			b, got := started(t, q, c, queueName)
			a.nq.Shutdown(ctx)
			if _, err := b.nq.Enqueue(ctx, &jobs.Job{Queue: queueName, Payload: map[string]any{"n": 1}}); err != nil {
				t.Fatal(err)
			}
			var ran bool
			select {
			case <-got:
				ran = true
			case <-time.After(3 * time.Second):
			}
			if ran != tc.runs {
				t.Fatalf("%s: the other backend ran the job: %v, measured %v", tc.name, ran, tc.runs)
			}
		})
	}
}
