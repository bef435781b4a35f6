package lifecycle

import (
	"context"
	"fmt"
	"strconv"

	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// Cancel: session S cancels a job from outside (cancel.sql), whoever holds it: the job is done
// with, and its owner's later completion or failure must change nothing.
type Cancel struct {
	S   string
	Job int64
}

const fmtCancel = "cancel job %d"

func (o Cancel) String() string { return on(o.S) + fmt.Sprintf(fmtCancel, o.Job) }
func (o Cancel) On() string     { return o.S }

// Applicable: where the queue has cancel.sql, and wherever the expiry hook could run on the job.
func (o Cancel) Applicable(w *program.World) bool {
	return w.Can.Cancel && (program.Expire{S: o.S, Job: o.Job}).Applicable(w)
}
func (o Cancel) Stmts(*program.World) []program.Stmt { return []program.Stmt{CancelStmt{Job: o.Job}} }

func init() {
	program.Syntax(fmtCancel, func(s string, v []string) (program.Op, error) {
		id, err := strconv.ParseInt(v[0], 10, 64)
		return Cancel{S: s, Job: id}, err
	})
}

// CancelStmt cancels job Job (cancel.sql).
type CancelStmt struct{ Job int64 }

func (CancelStmt) Name() string      { return "cancel" }
func (CancelStmt) File() string      { return sut.FileCancel }
func (st CancelStmt) String() string { return fmt.Sprintf("cancel job %d", st.Job) }
func (st CancelStmt) Answer(r program.Result) string {
	if r.Err != nil {
		return "error: " + oneLine(r.Err)
	}
	return fmt.Sprintf("job %d: %s", st.Job, rows(r.Out.Rows))
}
func (st CancelStmt) Exec(ctx context.Context, s *sut.Session) program.Result {
	rep, clk, err := s.Extra(ctx, sut.FileCancel, sut.Args{Job: st.Job})
	return program.Result{Out: model.Output{Rows: rep.Rows}, Clock: clk, Err: err}
}
func (st CancelStmt) Judge(m *model.Queue, _ *program.Session, r program.Result, at model.Window) error {
	if r.Err != nil {
		return program.QueueError(r.Err)
	}
	return m.Cancel(at, st.Job, r.Out.Rows)
}
func (st CancelStmt) Apply(_ *program.World, s *program.Session, r program.Result, _ model.Window) {
	if r.Err != nil {
		s.StatementFailed()
	}
}
func (st CancelStmt) Record(h program.Recording, r program.Result) {
	program.WriteOrFail(h, model.Input{Kind: model.OpCancel, Job: st.Job}, r)
}

func rows(n int64) string {
	if n == 1 {
		return "1 row"
	}
	return fmt.Sprintf("%d rows", n)
}
