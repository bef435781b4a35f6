package goqueues_test

import (
	"context"
	"os"
	"testing"
	"time"

	_ "pgqcheck/goqueues"
	"pgqcheck/model"
	"pgqcheck/sut"
	"pgqcheck/sut/pgserver"
	"pgqcheck/sut/suttest"
)

func TestMain(m *testing.M) { os.Exit(pgserver.Main(m)) }

// A claim whose worker's backend died is no holder: when a newer claim has locked the row and
// its number is not yet given, a snapshot must not show the job running at the dead claim's
// number. (A stress run's false alarm: "a snapshot shows job 141 at generation 1, but it must
// be running g3".)
func TestTxBoundSnapshotForgetsADeadHolder(t *testing.T) {
	ctx := context.Background()
	q, ok := sut.Registered("txbound")
	if !ok {
		t.Fatal("txbound is not registered")
	}
	in := suttest.Install(t, q)
	connect := func(name string) *sut.Session {
		s, err := in.Connect(ctx, name, sut.SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}
	w1, w2, reader := connect("w1"), connect("w2"), connect("reader")
	if _, _, err := w1.Enqueue(ctx, `{}`); err != nil {
		t.Fatal(err)
	}
	id, gen, ok, _, err := w1.Claim(ctx, time.Hour)
	if err != nil || !ok || gen != 1 {
		t.Fatalf("claim: job %d gen %d found %v: %v", id, gen, ok, err)
	}
	pid := w1.Conn().PgConn().PID()
	if err := in.Terminate(ctx, pid); err != nil {
		t.Fatal(err)
	}
	if err := in.WaitGone(ctx, pid); err != nil {
		t.Fatal(err)
	}
	// A claim in flight: the row is locked, its number not yet known to the queue.
	if _, err := w2.Conn().Exec(ctx, `BEGIN`); err != nil {
		t.Fatal(err)
	}
	if _, err := w2.Conn().Exec(ctx, `SELECT id FROM jobs WHERE id = $1 FOR UPDATE`, id); err != nil {
		t.Fatal(err)
	}
	rows, _, err := reader.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].State != model.Running || rows[0].Generation != 2 {
		t.Fatalf("snapshot %+v: want job %d running at the next claim's number, 2", rows, id)
	}
}
