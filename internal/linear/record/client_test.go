package record_test

import (
	"context"
	"testing"

	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/internal/linear/record"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/sut"
)

// A terminate aimed at a session whose statement was waiting may land just after the
// statement's answer came back: the backend is gone, but the connection, idle, has not read
// the server's last message and still looks open. The client must count it gone, or the next
// statement on it fails as a harness error (a scheduled run's drain: "snapshot.sql failed:
// conn closed", in a flake run on a queue with no transaction-bound claims).
func TestATerminateAfterTheAnswerEndsTheSession(t *testing.T) {
	ctx := context.Background()
	in := suttest.Install(t, sut.MustBuiltin("seed"))
	c, err := record.Dial(ctx, in, "s0", history.NewRecorder(false), sut.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	f := &record.Flight{Stmt: program.EnqueueStmt{Payload: `{}`}}
	if err := c.Send(ctx, f); err != nil {
		t.Fatal(err)
	}
	if r := f.Wait(); r.Err != nil {
		t.Fatalf("the enqueue failed: %v", r.Err)
	}
	f.Faulted = true
	if err := c.Terminate(ctx); err != nil {
		t.Fatal(err)
	}
	c.RecordAnswer(f)
	if c.Connected() {
		t.Fatal("the client still counts a connection whose backend it ended")
	}
	r, _, err := c.Do(ctx, &record.Flight{Stmt: program.EnqueueStmt{Payload: `{}`}})
	if err != nil || r.Err != nil {
		t.Fatalf("the statement after the terminate: %v %v", err, r.Err)
	}
	if got := c.Label(); got != "s0/2" {
		t.Fatalf("the statement after the terminate ran on %s, want a new connection (s0/2)", got)
	}
}
