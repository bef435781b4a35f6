package goqueues_test

import (
	"context"
	"os"
	"testing"
	"time"

	_ "github.com/pgqcheck/pgqcheck/internal/goqueues"
	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

func TestMain(m *testing.M) { os.Exit(pgserver.Main(m)) }

// A claim whose worker's backend died is no holder, and a claim the queue has not numbered is
// none yet: when such a claim has locked the row, a snapshot shows the job as the numbered
// claims left it, ready at the dead claim's number. The unnumbered claim may never answer: two
// stress runs' false alarms came from a snapshot that showed it: "a snapshot shows job 141 at
// generation 1, but it must be running g3" (the dead claim's number, running), and "a snapshot
// shows job 131 running, but it must be ready g0" (a claim whose reply was lost, its number
// never given, shown running at the next).
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
	// A claim in flight, or one whose reply is lost: the row is locked, and the queue has not
	// numbered the claim.
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
	if len(rows) != 1 || rows[0].State != model.Ready || rows[0].Generation != 1 || rows[0].LeaseLive {
		t.Fatalf("snapshot %+v: want job %d ready at the dead claim's number, 1", rows, id)
	}
}
