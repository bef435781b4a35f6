package lifecycle_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/program/lifecycle"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// Every lifecycle operation reads back from the line it prints.
func TestOpsRoundTrip(t *testing.T) {
	for _, op := range []program.Op{
		lifecycle.Fail{S: "w0"}, lifecycle.Fail{S: "w1", Back: 2}, lifecycle.Fail{S: "s1", Final: true}, lifecycle.Fail{S: "w2", Back: 1, Final: true},
		lifecycle.Renew{S: "w0"}, lifecycle.Renew{S: "s2", Back: 1}, lifecycle.Heartbeat{S: "w1"},
		lifecycle.Later{S: "s0", Delay: 250 * time.Millisecond}, lifecycle.Later{Delay: time.Second},
		lifecycle.WithEffect{S: "w0"}, lifecycle.WithEffect{S: "w2", Back: 1},
		lifecycle.Effect{S: "s1"}, lifecycle.Effect{S: "s1", Back: 2}, lifecycle.Settle{S: "s0"}, lifecycle.CountEffects{S: "s2"},
		lifecycle.DueEdge{Margin: 40 * time.Millisecond}, lifecycle.DueEdge{Margin: 10 * time.Millisecond, After: true},
	} {
		got, err := program.ParseOp(op.String())
		if err != nil || !reflect.DeepEqual(got, op) {
			t.Errorf("%q read back as %#v (%v), want %#v", op, got, err, op)
		}
	}
}

// Each operation applies only where the queue ships what it needs: on the seed, none does.
func TestOpsNeedTheirFiles(t *testing.T) {
	worlds := map[string]*program.World{}
	for _, name := range []string{"seed", "lifecycle"} {
		w := program.NewWorld(sut.MustBuiltin(name), program.Reader, "w0")
		w.Jobs = []int64{1}
		w.Session("w0").Tokens = []program.Token{{ID: 1, Gen: 1, Lease: time.Hour}}
		worlds[name] = w
	}
	for _, op := range []program.Op{lifecycle.Fail{S: "w0"}, lifecycle.Renew{S: "w0"}, lifecycle.WithEffect{S: "w0"}} {
		if op.Applicable(worlds["seed"]) || !op.Applicable(worlds["lifecycle"]) {
			t.Errorf("%s applies on the seed (%v) or not on the lifecycle queue (%v)", op, op.Applicable(worlds["seed"]), op.Applicable(worlds["lifecycle"]))
		}
	}
	// Per-claim renewals, not a worker's heartbeat; and a delay only once installed, when the
	// enqueue's parameters are known.
	if (lifecycle.Heartbeat{S: "w0"}).Applicable(worlds["lifecycle"]) || (lifecycle.Later{S: "w0", Delay: time.Second}).Applicable(worlds["lifecycle"]) {
		t.Error("a heartbeat or a delayed enqueue applies on the lifecycle queue before it was installed")
	}
	if (lifecycle.Fail{S: "w0", Back: 1}).Applicable(worlds["lifecycle"]) {
		t.Error("a failure of a token the worker never held applies")
	}
}

// A failure's due time counts as many attempts as the failing claim's generation, though this
// world saw none of the job's earlier claims (a stress worker's world sees only its own).
func TestFailDueCountsEveryClaim(t *testing.T) {
	w := program.NewWorld(sut.MustBuiltin("lifecycle"), program.Reader, "w0")
	at := model.Window{From: time.Second, To: time.Second + 10*time.Millisecond}
	lifecycle.FailStmt{Job: 1, Gen: 2, Retryable: true}.Apply(w, w.Session("w0"), program.Result{Out: model.Output{Rows: 1}}, at)
	if want := at.To + w.Life.BackoffAfter(2); w.DueBy < want {
		t.Fatalf("after the second claim's failure DueBy is %v; want at least %v (the backoff after 2 attempts)", w.DueBy, want)
	}
}

// A job reclaimed many times (each lapsed lease a generation) is still retried only before
// its last attempt: the due time a failure sets stays within the longest backoff the limit
// allows, which the drain can wait for.
func TestFailDueWithinTheAttemptLimit(t *testing.T) {
	w := program.NewWorld(sut.MustBuiltin("lifecycle"), program.Reader, "w0")
	if w.Life.MaxAttempts < 2 {
		t.Fatalf("the lifecycle queue allows %d attempts; the test needs a limit of at least 2", w.Life.MaxAttempts)
	}
	at := model.Window{From: time.Second, To: time.Second + 10*time.Millisecond}
	lifecycle.FailStmt{Job: 1, Gen: 7, Retryable: true}.Apply(w, w.Session("w0"), program.Result{Out: model.Output{Rows: 1}}, at)
	if most := at.To + w.Life.BackoffAfter(w.Life.MaxAttempts-1); w.DueBy != most {
		t.Fatalf("after a retried failure by generation 7, DueBy is %v; the limit of %d attempts allows no backoff past %v", w.DueBy, w.Life.MaxAttempts, most)
	}
}
