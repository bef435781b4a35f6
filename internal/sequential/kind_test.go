package sequential_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/sequential"
	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// A kind of statement is one type. peekStmt, a kind that exists only in this test, counts the
// ready jobs the queue's snapshot shows and is judged against the model's count; peek is the
// operation that sends it. Nothing outside this file knows of either: the sequential
// environment runs, judges, traces, applies and counts it through program.Stmt, and programs
// print and parse it by the line it registers (program.Syntax).
type peekStmt struct {
	lie int // added to what the queue answered: a broken implementation, for the negative case
}

func (peekStmt) Name() string      { return "peek" }
func (st peekStmt) String() string { return st.Name() }
func (st peekStmt) Exec(ctx context.Context, s *sut.Session) program.Result {
	rows, clk, err := s.Snapshot(ctx)
	n := 0
	for _, r := range rows {
		if r.State == model.Ready {
			n++
		}
	}
	return program.Result{Out: model.Output{Rows: int64(n + st.lie)}, Clock: clk, Err: err}
}
func (st peekStmt) Answer(r program.Result) string { return fmt.Sprintf("%d ready", r.Out.Rows) }
func (st peekStmt) Judge(m *model.Queue, _ *program.Session, r program.Result, _ model.Window) error {
	if r.Err != nil {
		return &program.HarnessError{Err: r.Err}
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
func (peekStmt) Apply(*program.World, *program.Session, program.Result, model.Window) {}
func (peekStmt) Record(program.Recording, program.Result)                             {}

type peek struct {
	S   string
	lie int
}

func (o peek) String() string { return o.S + " peek" }
func (o peek) On() string     { return o.S }
func (o peek) Applicable(w *program.World) bool {
	s := w.Session(o.S)
	return s != nil && !s.Busy
}
func (o peek) Stmts(*program.World) []program.Stmt { return []program.Stmt{peekStmt{lie: o.lie}} }

func init() {
	program.Syntax("peek", func(s string, _ []string) (program.Op, error) { return peek{S: s}, nil })
}

func TestAKindIsOneType(t *testing.T) {
	ctx := context.Background()
	e, err := sequential.NewEnv(ctx, suttest.Install(t, sut.MustBuiltin(sut.DefaultQueue)), program.Workers, program.Lockers)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	p, err := program.Parse("enqueue 2\nw1 peek\nw0 claim\nw1 peek\nw0 complete newest\nw1 peek\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Body(); !strings.Contains(got, "w1 peek\nw0 claim\nw1 peek") {
		t.Fatalf("the program prints as\n%s", got)
	}
	for _, op := range p.Ops {
		if err := e.Step(ctx, op); err != nil {
			t.Fatalf("%s: %v\n%s", op, err, e.Program())
		}
	}
	for _, want := range []string{"   2. w1 peek                      -> 2 ready\n", "   4. w1 peek                      -> 1 ready\n"} {
		if !strings.Contains(e.Program(), want) {
			t.Errorf("the trace lacks %q:\n%s", want, e.Program())
		}
	}
	// A broken peek is judged as any statement is: its answer breaks the model.
	err = e.Step(ctx, peek{S: "w1", lie: 1})
	var v *model.Violation
	if !errors.As(err, &v) || !strings.Contains(v.Detail, "peek saw 2 ready jobs, the model has 1") {
		t.Fatalf("a lying peek: got %v, want its violation", err)
	}
}
