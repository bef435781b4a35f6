package neoq

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

// database is a fresh database on the suite's server, dropped when the test ends.
func database(t *testing.T) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	srv, err := pgserver.Shared(ctx)
	if err != nil {
		t.Fatal(err)
	}
	db, err := srv.CreateDatabase(ctx, "neoqadapter")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Drop(context.Background()) })
	c, err := pgx.Connect(ctx, db.DSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// neoqBackends lists the connections of the adapter's neoq backends still open, by name.
func neoqBackends(t *testing.T, c *pgx.Conn) []string {
	t.Helper()
	rows, _ := c.Query(context.Background(), `SELECT application_name FROM pg_stat_activity
		WHERE application_name LIKE 'pgqcheck-neoq-%' AND datname = current_database() ORDER BY 1`)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestClaimsLeaveNothing: every backend a claim starts is gone once the claim ends (completed,
// expired, found nothing) and once a reset found claims still held; only the enqueuing
// backend's connections stay.
func TestClaimsLeaveNothing(t *testing.T) {
	ctx := context.Background()
	c := database(t)
	q := &Queue{}
	if err := q.Migrate(ctx, c); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := q.Enqueue(ctx, c, "p"); err != nil {
			t.Fatal(err)
		}
	}
	claim := func() (int64, int64) {
		t.Helper()
		id, gen, ok, err := q.Claim(ctx, c, 0, "w")
		if err != nil || !ok {
			t.Fatalf("claim: %v, found %v", err, ok)
		}
		return id, gen
	}
	a, ga := claim()
	b, _ := claim()
	held, _ := claim()
	if n, err := q.Complete(ctx, c, a, ga); n != 1 || err != nil {
		t.Fatalf("complete(%d, %d): %d rows, %v", a, ga, n, err)
	}
	if err := q.Expire(ctx, c, b); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := q.Claim(ctx, c, 0, "w"); err != nil || !ok {
		t.Fatalf("a claim after job %d's expiry: %v, found %v", b, err, ok)
	}
	// Two claims hold jobs; a third finds nothing.
	if id, _, ok, err := q.Claim(ctx, c, 0, "w"); err != nil || ok {
		t.Fatalf("a claim with every job held: job %d, %v", id, err)
	}
	// The suite's reset: TRUNCATE, which waits for the claims still holding their jobs.
	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := c.Exec(tctx, `TRUNCATE neoq_jobs, neoq_dead_jobs RESTART IDENTITY`); err != nil {
		t.Fatalf("the reset's TRUNCATE with job %d held: %v", held, err)
	}
	q.Reset()
	enq := q.enq.app
	deadline := time.Now().Add(5 * time.Second)
	for {
		var left []string
		for _, n := range neoqBackends(t, c) {
			if n != enq {
				left = append(left, n)
			}
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("connections of ended claims still open: %s", strings.Join(left, ", "))
		}
		time.Sleep(50 * time.Millisecond)
	}
	// neoq's own goroutines that no public call ends (see the package doc) are counted, not
	// asserted.
	t.Logf("goroutines after 5 claims and a reset: %d", runtime.NumGoroutine())
}
