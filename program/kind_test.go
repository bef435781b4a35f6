package program

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"pgqcheck/model"
	"pgqcheck/sut"
	"pgqcheck/sut/suttest"
)

// A kind of statement is one type. peekStmt, a kind that exists only in this test, counts the
// ready jobs the queue's snapshot shows and is judged against the model's count; peek is the
// operation that sends it. Nothing outside this file knows of either: the sequential
// environment runs, judges, traces, applies and counts it through the Stmt interface, and
// programs print and parse it by the rule registered below.
type peekStmt struct {
	harnessStmt
	lie int // added to what the queue answered: a broken implementation, for the negative case
}

func (peekStmt) Name() string      { return "peek" }
func (st peekStmt) String() string { return st.Name() }
func (st peekStmt) Exec(ctx context.Context, s *sut.Session) Result {
	rows, clk, err := s.Snapshot(ctx)
	n := 0
	for _, r := range rows {
		if r.State == model.Ready {
			n++
		}
	}
	return Result{Out: model.Output{Rows: int64(n + st.lie)}, Clock: clk, Err: err}
}
func (st peekStmt) Answer(r Result) string { return fmt.Sprintf("%d ready", r.Out.Rows) }
func (st peekStmt) Judge(m *model.Queue, _ *Session, r Result, _ model.Window) error {
	if r.Err != nil {
		return queueErr(r.Err)
	}
	want := 0
	for _, j := range m.Jobs() {
		if j.State == model.Ready {
			want++
		}
	}
	if r.Out.Rows != int64(want) {
		return model.Violate(model.PRecovery, "peek saw %d ready jobs, the model has %d", r.Out.Rows, want)
	}
	return nil
}
func (peekStmt) Apply(*World, *Session, Result, model.Window) {}

type peek struct {
	S   string
	lie int
}

func (o peek) String() string           { return on(o.S) + "peek" }
func (o peek) On() string               { return o.S }
func (o peek) Applicable(w *World) bool { _, ok := idle(w, o.S); return ok }
func (o peek) Stmts(*World) []Stmt      { return []Stmt{peekStmt{lie: o.lie}} }

func init() {
	rule("peek", func(s string, _ []string) (Op, error) { return peek{S: s}, nil })
	examples = append(examples, peek{S: "w1"}) // TestOpsRoundTrip prints and parses it back
}

func TestAKindIsOneType(t *testing.T) {
	ctx := context.Background()
	in := suttest.Install(t, sut.MustBuiltin(sut.DefaultQueue))
	e, err := NewEnv(ctx, in, Workers, Lockers)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	p, err := Parse("enqueue 2\npeek\nw0 claim\npeek\nw0 complete newest\npeek\n")
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range p.Ops {
		if err := e.Step(ctx, op); err != nil {
			t.Fatalf("%s: %v\n%s", op, err, e.Program())
		}
	}
	if got, want := e.Program(), "   2. peek                         -> 2 ready\n"; !strings.Contains(got, want) {
		t.Errorf("the trace lacks %q:\n%s", want, got)
	}
	if !strings.Contains(e.Program(), "   4. peek                         -> 1 ready") {
		t.Errorf("after a claim, peek must see one ready job:\n%s", e.Program())
	}
	// A broken peek is judged as any statement is: its answer breaks the model.
	err = e.Step(ctx, peek{lie: 1})
	var v *model.Violation
	if !errors.As(err, &v) || !strings.Contains(v.Detail, "peek saw 2 ready jobs, the model has 1") {
		t.Fatalf("a lying peek: got %v, want its violation", err)
	}
}
