package record_test

import (
	"context"
	"os"
	"testing"
	"time"

	_ "github.com/pgqcheck/pgqcheck/internal/goqueues" // the txbound queue
	"github.com/pgqcheck/pgqcheck/internal/linear/check"
	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/internal/linear/record"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/sut"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

func TestMain(m *testing.M) { os.Exit(pgserver.Main(m)) }

// A statement that fails inside a claim's transaction aborts it, and Postgres lets go of the
// transaction's row locks then, not at its ROLLBACK: another worker claims the job while the
// first still sits in its failed transaction. The history must end the first claim's lease by
// then. (A stress run on gue: a cancel hit a worker's completion, and the next claim of the
// job was called a claim of a done job, property 4.)
func TestAFailedStatementEndsATxBoundLease(t *testing.T) {
	ctx := context.Background()
	q, ok := sut.Registered("txbound")
	if !ok {
		t.Fatal("txbound is not registered")
	}
	in := suttest.Install(t, q)
	rec := history.NewRecorder(false)
	dial := func(name string) *record.Client {
		c, err := record.Dial(ctx, in, name, rec, sut.SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	w0, w1 := dial("w0"), dial("w1")
	do := func(c *record.Client, st program.Stmt) program.Result {
		r, v, err := c.Do(ctx, &record.Flight{Stmt: st})
		if err != nil || v != nil {
			t.Fatalf("%s on %s: %v %v", st, c.Name, err, v)
		}
		return r
	}
	if r := do(w0, program.EnqueueStmt{Payload: `{}`}); r.Err != nil {
		t.Fatal(r.Err)
	}
	claim := do(w0, program.ClaimStmt{Lease: time.Hour})
	if claim.Err != nil || !claim.Out.Found {
		t.Fatalf("w0's claim: %+v", claim)
	}
	// The failure, inside w0's claim transaction, which stays open and failed.
	if _, err := w0.Session().Conn().Exec(ctx, `SELECT 1/0`); err == nil {
		t.Fatal("1/0 did not fail")
	}
	do(w0, program.CompleteStmt{Job: claim.Out.Job, Gen: claim.Out.Gen}) // refused in the failed transaction
	if st := w0.Session().Conn().PgConn().TxStatus(); st != 'E' {
		t.Fatalf("w0's transaction is %c, not failed: the test no longer shows the case", st)
	}
	again := do(w1, program.ClaimStmt{Lease: time.Hour})
	if again.Err != nil || !again.Out.Found || again.Out.Job != claim.Out.Job {
		t.Fatalf("w1's claim while w0's transaction is failed: %+v; Postgres released the row lock at the failure", again)
	}
	do(w1, program.CompleteStmt{Job: again.Out.Job, Gen: again.Out.Gen})
	h := rec.History(q.Name, "stress")
	h.Shape = q.Shape()
	if v := check.Check(h, time.Minute); !v.OK {
		t.Fatalf("the history of a correct queue fails: %s\n%s", v, v.Explanation)
	}
}
