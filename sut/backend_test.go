package sut_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// sqlInGo is a queue written in Go that runs a folder's own statements (a folder of integer ids
// with a generation counter and no worker parameter), so its answers must be the folder's. With
// noGen it hands back no generation, as a queue declared without one does, and the suite's own
// claim numbers must stand in for the folder's generations.
type sqlInGo struct {
	q      *sut.Queue
	noGen  bool
	resets *int
}

func (g *sqlInGo) Schema() string { return g.q.Schema }

func (g *sqlInGo) Enqueue(ctx context.Context, c *pgx.Conn, payload string) (int64, error) {
	var id int64
	err := c.QueryRow(ctx, g.q.Enqueue, payload).Scan(&id)
	return id, err
}

func (g *sqlInGo) Claim(ctx context.Context, c *pgx.Conn, lease time.Duration, _ string) (int64, int64, bool, error) {
	var id, gen int64
	err := c.QueryRow(ctx, g.q.Claim, lease).Scan(&id, &gen)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, 0, false, nil
	}
	if g.noGen {
		gen = 0
	}
	return id, gen, err == nil, err
}

func (g *sqlInGo) Complete(ctx context.Context, c *pgx.Conn, id, gen int64) (int64, error) {
	var n int64
	err := c.QueryRow(ctx, g.q.Complete, id, gen).Scan(&n)
	return n, err
}

func (g *sqlInGo) Expire(ctx context.Context, c *pgx.Conn, id int64) error {
	_, err := c.Exec(ctx, g.q.Expire, id)
	return err
}

func (g *sqlInGo) Snapshot(ctx context.Context, c *pgx.Conn) ([]model.Row, error) {
	rows, _ := c.Query(ctx, g.q.Snapshot) // a failed query's error is the rows'
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (model.Row, error) {
		var r model.Row
		var state string
		err := row.Scan(&r.ID, &state, &r.Generation, &r.LeaseLive)
		r.State = model.State(state)
		if g.noGen {
			r.Generation = 0
		}
		return r, err
	})
}

func (g *sqlInGo) Lock(ctx context.Context, c *pgx.Conn, id int64) error {
	rows, err := c.Query(ctx, g.q.Lock, id)
	if err != nil {
		return err
	}
	rows.Close()
	return rows.Err()
}

func (g *sqlInGo) Reset() { *g.resets++ }

// lifeInGo is sqlInGo for a folder with the lifecycle's statements: each is a Go method of the
// interface a Go queue implements for it.
type lifeInGo struct{ *sqlInGo }

func (g lifeInGo) EnqueueAt(ctx context.Context, c *pgx.Conn, payload string, delay time.Duration) (int64, error) {
	var id int64
	err := c.QueryRow(ctx, g.q.Enqueue, payload, delay).Scan(&id)
	return id, err
}

func (g lifeInGo) Enqueue(ctx context.Context, c *pgx.Conn, payload string) (int64, error) {
	return g.EnqueueAt(ctx, c, payload, 0)
}

func (g lifeInGo) Fail(ctx context.Context, c *pgx.Conn, id, gen int64, retryable bool, text string) (int64, error) {
	var n int64
	err := c.QueryRow(ctx, g.q.Fail, id, gen, retryable, text).Scan(&n)
	return n, err
}

func (g lifeInGo) Renew(ctx context.Context, c *pgx.Conn, id, gen int64, lease time.Duration) (int64, error) {
	var n int64
	err := c.QueryRow(ctx, g.q.Renew, id, gen, lease).Scan(&n)
	return n, err
}

func (g lifeInGo) Effect(ctx context.Context, c *pgx.Conn, id int64) error {
	_, err := c.Exec(ctx, g.q.Effect, id)
	return err
}

func (g lifeInGo) Effects(ctx context.Context, c *pgx.Conn) ([]model.EffectCount, error) {
	rows, _ := c.Query(ctx, g.q.Effects)
	return pgx.CollectRows(rows, pgx.RowToStructByPos[model.EffectCount])
}

func (g lifeInGo) Rebuild(ctx context.Context, c *pgx.Conn) error {
	_, err := c.Exec(ctx, g.q.Reset)
	return err
}

func (g lifeInGo) Snapshot(ctx context.Context, c *pgx.Conn) ([]model.Row, error) {
	rows, _ := c.Query(ctx, g.q.Snapshot)
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (model.Row, error) {
		var r model.Row
		var state string
		var kept *string
		err := row.Scan(&r.ID, &state, &r.Generation, &r.LeaseLive, &r.Attempts, &kept)
		r.State = model.State(state)
		if kept != nil {
			r.Kept = *kept
		}
		if g.noGen {
			r.Generation = 0
		}
		return r, err
	})
}

// goTwin is folder q written in Go, and a count of the resets its state was told of.
func goTwin(q *sut.Queue, noGen bool) (*sut.Queue, *int) {
	resets := new(int)
	d := sut.Declared{Order: q.Order, Shape: q.Shape(), FixedLease: q.FixedLease}
	d.Shape.NoGeneration = noGen
	return sut.GoQueueOf(sut.GoDef{Name: q.Name + "-in-go", Declared: d,
		New: func() sut.GoQueue {
			g := &sqlInGo{q: q, noGen: noGen, resets: resets}
			if q.Can().Fail {
				return lifeInGo{g}
			}
			return g
		}}), resets
}

// seedTranscript is what the seed answers to transcript: a locked job skipped, a claim of each
// job, a completion accepted once, a stale one refused, an expired lease reclaimed, no job left to
// claim, no rescue step, and a reset that starts ids and claims again.
var seedTranscript = []string{
	"enqueue -> 1 ok", "enqueue -> 2 ok", "enqueue -> 3 ok",
	"lock 1 -> ok",
	"claim -> 2 1 true ok",
	"claim -> 1 1 true ok",
	"complete 2 1 -> 1 ok", "complete 2 1 -> 0 ok",
	"expire 1 -> ok",
	"claim -> 1 2 true ok",
	"complete 1 1 -> 0 ok",
	"claim -> 3 1 true ok",
	"claim -> 0 0 false ok",
	"snapshot -> [1:running/g2/live 2:done/g1 3:running/g1/live] ok",
	"rescue -> [] queue QUEUE has no rescue.sql",
	"enqueue -> 1 ok",
	"claim -> 1 1 true ok",
}

// transcript runs one fixed sequence of operations on an installed queue, through sessions as
// every mode uses them, and writes down each answer. Every window must be known.
func transcript(t *testing.T, in *sut.Installed) []string {
	t.Helper()
	ctx := context.Background()
	conn := func(name string) *sut.Session {
		s, err := in.Connect(ctx, name, sut.SessionOptions{LockTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}
	a, b, l := conn("a"), conn("b"), conn("l")
	var out []string
	note := func(clk sut.Clock, err error, format string, args ...any) {
		t.Helper()
		out = append(out, answer(t, in, clk, err, format, args...))
	}
	enqueue := func() {
		id, clk, err := a.Enqueue(ctx, `{}`)
		note(clk, err, "enqueue -> %d", id)
	}
	claim := func(s *sut.Session) {
		id, gen, ok, clk, err := s.Claim(ctx, time.Hour)
		note(clk, err, "claim -> %d %d %v", id, gen, ok)
	}
	complete := func(s *sut.Session, id, gen int64) {
		n, clk, err := s.Complete(ctx, id, gen)
		note(clk, err, "complete %d %d -> %d", id, gen, n)
	}
	enqueue()
	enqueue()
	enqueue()
	if err := l.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	out = append(out, fmt.Sprintf("lock 1 -> %v", okOr(l.Lock(ctx, 1))))
	claim(a)
	if err := l.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	claim(b)
	complete(a, 2, 1)
	complete(a, 2, 1)
	clk, err := a.Expire(ctx, 1)
	note(clk, err, "expire 1 ->")
	claim(a)
	complete(b, 1, 1)
	claim(b)
	claim(b)
	rows, clk, err := a.Snapshot(ctx)
	note(clk, err, "snapshot -> %v", rows)
	ids, _, err := a.Rescue(ctx)
	out = append(out, fmt.Sprintf("rescue -> %v %s", ids, strings.ReplaceAll(okOr(err), in.Queue.Source, "QUEUE")))
	if err := in.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	enqueue()
	claim(b)
	if in.Queue.Can().Fail {
		out = append(out, lifeTranscript(t, in, a)...)
	}
	return out
}

// lifeTranscript goes on with the lifecycle's statements, after the reset: a job due in an
// hour, a renewal, a failure accepted once and kept, and an effect counted.
func lifeTranscript(t *testing.T, in *sut.Installed, a *sut.Session) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	record := func(clk sut.Clock, err error, format string, args ...any) {
		t.Helper()
		out = append(out, answer(t, in, clk, err, format, args...))
	}
	id, clk, err := a.EnqueueAt(ctx, `{}`, time.Hour)
	record(clk, err, "enqueue in 1h -> %d", id)
	cid, gen, ok, clk, err := a.Claim(ctx, time.Hour)
	record(clk, err, "claim -> %d %d %v", cid, gen, ok)
	n, clk, err := a.Renew(ctx, 1, 1, time.Hour)
	record(clk, err, "renew 1 1 -> %d", n)
	for range 2 {
		n, clk, err = a.Fail(ctx, 1, 1, true, "boom")
		record(clk, err, "fail 1 1 -> %d", n)
	}
	clk, err = a.Effect(ctx, 1)
	record(clk, err, "effect 1 ->")
	e, clk, err := a.Effects(ctx)
	record(clk, err, "effects -> %v", e)
	rows, clk, err := a.Snapshot(ctx)
	record(clk, err, "snapshot -> %v", rows)
	return out
}

// answer is one line of a transcript: what was asked, what came back, and the error or "ok". The
// statement's window must be known.
func answer(t *testing.T, in *sut.Installed, clk sut.Clock, err error, format string, args ...any) string {
	t.Helper()
	if !clk.Known() || clk.To.Before(clk.From) {
		t.Errorf("%s: window %v is not known", fmt.Sprintf(format, args...), clk)
	}
	res := "ok"
	if err != nil {
		res = strings.ReplaceAll(err.Error(), in.Queue.Source, "QUEUE")
	}
	return fmt.Sprintf(format, args...) + " " + res
}

func okOr(err error) string {
	if err != nil {
		return err.Error()
	}
	return "ok"
}

// The folder of SQL statements and a Go queue that runs the same statements are two backends of
// one contract: on the same operations their sessions give the same answers, the Go queue's
// declaration is the folder's (its locker found in its GoQueue), and its state hears of each
// reset. Where the Go queue keeps no generation, the suite's claim numbers give the same answers.
func TestBackendsAnswerAlike(t *testing.T) {
	for _, name := range sut.Builtins() {
		t.Run(name, func(t *testing.T) {
			q := sut.MustBuiltin(name)
			want := transcript(t, suttest.Install(t, q))
			if name == sut.DefaultQueue {
				diffLines(t, "the seed folder", want, seedTranscript)
			}
			for _, noGen := range []bool{false, true} {
				twin, resets := goTwin(q, noGen)
				if !noGen && twin.Declared != q.Declared {
					t.Errorf("Go twin declares %+v, the folder %+v", twin.Declared, q.Declared)
				}
				got := transcript(t, suttest.Install(t, twin))
				diffLines(t, fmt.Sprintf("the Go twin (no generation: %v)", noGen), got, want)
				if *resets != 1 {
					t.Errorf("Go twin (no generation: %v): its state heard of %d resets, want 1", noGen, *resets)
				}
			}
		})
	}
}

func diffLines(t *testing.T, who string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s answered\n\t%s\nwant\n\t%s", who, strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// rescuedInGo is sqlInGo for a folder with a rescue step, building its schema as a Go queue's
// own migrator would: the Go queue then rescues and installs as the folder does.
type rescuedInGo struct {
	*sqlInGo
	migrated *int
}

func (g rescuedInGo) Migrate(ctx context.Context, c *pgx.Conn) error {
	*g.migrated++
	_, err := c.Exec(ctx, g.q.Schema, pgx.QueryExecModeSimpleProtocol)
	return err
}

func (g rescuedInGo) Rescue(ctx context.Context, c *pgx.Conn) ([]int64, error) {
	rows, _ := c.Query(ctx, g.q.Rescue)
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// A Go queue's migrator builds its schema, and its rescue step is the folder's: the same
// answers to the same operations, rescue included.
func TestGoMigratorAndRescuer(t *testing.T) {
	q, err := sut.LoadDir(suttest.ModuleDir(t, "testdata/queues/rescued"))
	if err != nil {
		t.Fatal(err)
	}
	migrated := new(int)
	twin := sut.GoQueueOf(sut.GoDef{Name: "rescued-in-go", Declared: q.Declared,
		New: func() sut.GoQueue { return rescuedInGo{&sqlInGo{q: q, resets: new(int)}, migrated} }})
	if !twin.Can().Rescue || twin.Declared != q.Declared {
		t.Fatalf("Go twin declares %+v, the folder %+v", twin.Declared, q.Declared)
	}
	run := func(q *sut.Queue) []string {
		in := suttest.Install(t, q)
		ctx := context.Background()
		s, err := in.Connect(ctx, "a", sut.SessionOptions{LockTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var out []string
		id, clk, err := s.Enqueue(ctx, `{}`)
		out = append(out, answer(t, in, clk, err, "enqueue -> %d", id))
		id, gen, ok, clk, err := s.Claim(ctx, time.Hour)
		out = append(out, answer(t, in, clk, err, "claim -> %d %d %v", id, gen, ok))
		ids, clk, err := s.Rescue(ctx)
		out = append(out, answer(t, in, clk, err, "rescue -> %v", ids))
		clk, err = s.Expire(ctx, 1)
		out = append(out, answer(t, in, clk, err, "expire 1 ->"))
		ids, clk, err = s.Rescue(ctx)
		out = append(out, answer(t, in, clk, err, "rescue -> %v", ids))
		id, gen, ok, clk, err = s.Claim(ctx, time.Hour)
		out = append(out, answer(t, in, clk, err, "claim -> %d %d %v", id, gen, ok))
		return out
	}
	want := run(q)
	diffLines(t, "the rescued folder", want, []string{"enqueue -> 1 ok", "claim -> 1 1 true ok", "rescue -> [] ok",
		"expire 1 -> ok", "rescue -> [1] ok", "claim -> 1 2 true ok"})
	diffLines(t, "its Go twin", run(twin), want)
	if *migrated != 1 {
		t.Errorf("the Go twin's migrator ran %d times, want 1", *migrated)
	}
}
