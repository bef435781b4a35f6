package lifecycle

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// Snooze: worker S puts one of its claims' jobs (Back=0 its newest) back to wait Delay, without
// spending an attempt (snooze.sql). An old token is a paused worker's, whose job may since have
// been reclaimed: its snooze must change nothing.
type Snooze struct {
	S     string
	Back  int
	Delay time.Duration
}

const (
	fmtSnooze     = "snooze newest for %v"
	fmtSnoozeBack = "snooze newest-%d for %v"
)

func (o Snooze) String() string {
	if o.Back == 0 {
		return on(o.S) + fmt.Sprintf(fmtSnooze, o.Delay)
	}
	return on(o.S) + fmt.Sprintf(fmtSnoozeBack, o.Back, o.Delay)
}
func (o Snooze) On() string { return o.S }

// Applicable: where the queue has snooze.sql, and the token could be presented in a completion.
func (o Snooze) Applicable(w *program.World) bool {
	return w.Can.Snooze && (program.Complete{S: o.S, Back: o.Back}).Applicable(w)
}
func (o Snooze) Stmts(w *program.World) []program.Stmt {
	t, _ := w.Session(o.S).Newest(o.Back)
	return []program.Stmt{SnoozeStmt{Job: t.ID, Gen: t.Gen, Delay: o.Delay}}
}

func init() {
	program.Syntax(fmtSnooze, func(s string, v []string) (program.Op, error) {
		d, err := time.ParseDuration(v[0])
		return Snooze{S: s, Delay: d}, err
	})
	program.Syntax(fmtSnoozeBack, func(s string, v []string) (program.Op, error) {
		n, err := strconv.Atoi(v[0])
		if err != nil {
			return nil, err
		}
		d, err := time.ParseDuration(v[1])
		return Snooze{S: s, Back: n, Delay: d}, err
	})
}

// SnoozeStmt snoozes the claim (Job, Gen) for Delay.
type SnoozeStmt struct {
	Job, Gen int64
	Delay    time.Duration
}

func (SnoozeStmt) Name() string { return "snooze" }
func (SnoozeStmt) File() string { return sut.FileSnooze }
func (st SnoozeStmt) String() string {
	return fmt.Sprintf("snooze job %d gen %d for %v", st.Job, st.Gen, st.Delay)
}
func (st SnoozeStmt) Answer(r program.Result) string { return rowsAnswer(st.Job, st.Gen, r) }
func (st SnoozeStmt) Exec(ctx context.Context, s *sut.Session) program.Result {
	rep, clk, err := s.Extra(ctx, sut.FileSnooze, sut.Args{Job: st.Job, Gen: st.Gen, Delay: st.Delay})
	return program.Result{Out: model.Output{Rows: rep.Rows}, Clock: clk, Err: err}
}
func (st SnoozeStmt) Judge(m *model.Queue, _ *program.Session, r program.Result, at model.Window) error {
	if r.Err != nil {
		return program.QueueError(r.Err)
	}
	return m.Snooze(at, st.Job, st.Gen, st.Delay, r.Out.Rows)
}

// Apply: a snoozed job is due once its delay ends, which a drain waits for.
func (st SnoozeStmt) Apply(w *program.World, s *program.Session, r program.Result, at model.Window) {
	if r.Err != nil {
		s.StatementFailed()
	}
	if r.Err == nil && r.Out.Rows == 1 || r.Err != nil && at.To == model.Never {
		w.DueAfter(at, st.Delay)
	}
}
func (st SnoozeStmt) Record(h program.Recording, r program.Result) {
	program.WriteOrFail(h, model.Input{Kind: model.OpSnooze, Job: st.Job, Gen: st.Gen, Delay: st.Delay}, r)
}
