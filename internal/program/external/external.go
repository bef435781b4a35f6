// Package external holds the operations and statements of a job's external effect: a call of
// a destination outside the database (effectdest) that a worker makes between its claim and its
// completion, carrying the claim's generation as its fencing value and the job as its
// idempotency key, and a reading of what the destination holds of every job. Each statement is
// one type of program.Stmt and each operation one program.Op that prints itself and parses
// back, as the lifecycle's are; they apply only where the run has a destination (World.Dest).
//
// A worker whose call's reply was lost cannot know whether the effect applied, and sends it
// again: at-least-once delivery, which only the destination's fencing or idempotency turns into
// one effect per job. What the destination then holds is judged by property 17: a fencing
// destination holds at most one effect per job and exactly one for a done job; at one that
// does not fence, every effect beyond a job's first is a duplicate the suite caused, reported
// as a finding the destination does not promise to prevent.
package external

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/effectdest"
	"github.com/pgqcheck/pgqcheck/internal/faultproxy"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/textfmt"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// CallStmt calls the destination at URL with the effect of the claim (Job, Gen), the fault
// armed for the first attempt; a lost reply is sent again once, without it. Its result's
// Out.Rows is how many attempts were sent, and Dest what the destination held of the job
// before the first: a lost attempt may have applied, which only the destination's counts show.
type CallStmt struct {
	URL      string
	Job, Gen int64
	Fault    faultproxy.Fault
}

func (CallStmt) Name() string { return "call effect" }
func (st CallStmt) String() string {
	return fmt.Sprintf("call effect of job %d gen %d%s", st.Job, st.Gen, faultSuffix(st.Fault))
}
func (st CallStmt) Exec(ctx context.Context, _ *sut.Session) program.Result {
	before, err := effectdest.Read(ctx, st.URL)
	if err != nil {
		return program.Result{Err: err}
	}
	c := effectdest.Call{Job: st.Job, Fence: st.Gen, Key: effectdest.KeyOf(st.Job), Fault: st.Fault}
	a, err := effectdest.Send(ctx, st.URL, c)
	attempts := int64(1)
	if errors.Is(err, effectdest.ErrLost) {
		c.Fault = faultproxy.Fault{}
		attempts++
		a, err = effectdest.Send(ctx, st.URL, c)
	}
	return program.Result{Out: model.Output{Rows: attempts}, Call: a, Dest: before, Err: err}
}
func (st CallStmt) Answer(r program.Result) string {
	if r.Err != nil {
		return "error: " + textfmt.OneLine(r.Err.Error())
	}
	s := fmt.Sprintf("%s (%d in force)", r.Call.Outcome, r.Call.Count.InForce)
	if r.Out.Rows > 1 {
		s = "reply lost, sent again: " + s
	}
	return s
}

// Judge: an effect standing twice at the destination is a duplicate, whether the destination
// promised to prevent it or not; the call that applied it is the one that shows it.
func (st CallStmt) Judge(_ *model.Queue, _ *program.Session, r program.Result, _ model.Window) error {
	if r.Err != nil {
		return &program.HarnessError{Err: fmt.Errorf("%s: %w", st, r.Err)}
	}
	c := r.Call.Count
	n := duplicates(st.Job, r)
	if n <= 0 {
		return nil
	}
	again := "again"
	if n > 1 {
		again = fmt.Sprintf("%d times more (a lost reply applied before it was sent again)", n)
	}
	v := model.Violate(model.PExternal, "job %d's effect stands %d times at a destination in %s mode after %d calls: this call (gen %d) applied it %s",
		st.Job, c.InForce, r.Call.Mode, c.Calls, st.Gen, again)
	v.NotPromised = !r.Call.Mode.Fences()
	return v
}
func (CallStmt) Apply(*program.World, *program.Session, program.Result, model.Window) {}
func (CallStmt) Record(program.Recording, program.Result)                             {}

// Count: no history records a call; what it counts is its own.
func (st CallStmt) Count(c *program.Counts, r program.Result) {
	if r.Err != nil {
		return
	}
	c.Calls++
	if r.Out.Rows > 1 {
		c.Retries++
	}
	c.Duplicates += int64(duplicates(st.Job, r))
}

// duplicates is how many effects of job the call added beyond its first.
func duplicates(job int64, r program.Result) int {
	before := 0
	for _, c := range r.Dest.Jobs {
		if c.Job == job {
			before = c.InForce
		}
	}
	return max(r.Call.Count.InForce, 1) - max(before, 1)
}

// CountStmt reads what the destination at URL holds of every job.
type CountStmt struct{ URL string }

func (CountStmt) Name() string      { return "count external effects" }
func (st CountStmt) String() string { return st.Name() }
func (st CountStmt) Exec(ctx context.Context, _ *sut.Session) program.Result {
	c, err := effectdest.Read(ctx, st.URL)
	return program.Result{Dest: c, Err: err}
}
func (st CountStmt) Answer(r program.Result) string {
	if r.Err != nil {
		return "error: " + textfmt.OneLine(r.Err.Error())
	}
	var jobs []string
	for _, c := range r.Dest.Jobs {
		jobs = append(jobs, fmt.Sprintf("%d:%d/%d", c.Job, c.InForce, c.Calls))
	}
	return fmt.Sprintf("%s: [%s] (job:in force/calls)", r.Dest.Mode, strings.Join(jobs, " "))
}

// Judge holds a fencing destination to one effect per job, and to exactly one for a job the
// model has done whose workers called it. At a destination that does not fence, the calls that
// applied a duplicate reported it.
func (st CountStmt) Judge(m *model.Queue, _ *program.Session, r program.Result, _ model.Window) error {
	if r.Err != nil {
		return &program.HarnessError{Err: fmt.Errorf("%s: %w", st, r.Err)}
	}
	return Check(m, r.Dest)
}

// Duplicates are the effects a destination that does not fence holds beyond each job's first,
// one not-promised finding per job that has any.
func Duplicates(d effectdest.Counts) []*model.Violation {
	var out []*model.Violation
	for _, c := range d.Jobs {
		if n := c.Duplicates(); n > 0 && !d.Mode.Fences() {
			v := model.Violate(model.PExternal, "job %d's effect stands %d times at a destination in %s mode after %d calls", c.Job, c.InForce, d.Mode, c.Calls)
			v.NotPromised = true
			out = append(out, v)
		}
	}
	return out
}

// Check judges what a destination holds against the model's jobs (property 17).
func Check(m *model.Queue, d effectdest.Counts) error {
	return CheckDone(d, func(id int64) bool {
		j, ok := m.Job(id)
		return ok && j.State == model.Done
	})
}

// CheckDone judges what a destination holds, done telling which jobs are done (property 17).
func CheckDone(d effectdest.Counts, done func(job int64) bool) error {
	if !d.Mode.Fences() {
		return nil
	}
	for _, c := range d.Jobs {
		if c.InForce > 1 {
			return model.Violate(model.PExternal, "job %d's effect stands %d times at a destination in %s mode after %d calls", c.Job, c.InForce, d.Mode, c.Calls)
		}
		if done(c.Job) && c.Calls > 0 && c.InForce != 1 {
			return model.Violate(model.PExternal, "job %d is done and its workers called the destination (%s mode) %d times, but %d of its effects stand", c.Job, d.Mode, c.Calls, c.InForce)
		}
	}
	return nil
}
func (CountStmt) Apply(*program.World, *program.Session, program.Result, model.Window) {}
func (CountStmt) Record(program.Recording, program.Result)                             {}

// The formats the operations print with and parse from; the session an operation runs on is
// printed before it. A call's fault follows it.
const (
	fmtCall      = "call effect of newest"
	fmtCallBack  = "call effect of newest-%d"
	fmtCount     = "count external effects"
	fmtDropped   = ", reply dropped"
	fmtCut       = ", cut"
	fmtDelayed   = ", reply delayed %v"
	fmtStalled   = ", stalled %v"
	fmtFaultNone = ""
)

func faultSuffix(f faultproxy.Fault) string {
	switch f.Kind {
	case faultproxy.DropReply:
		return fmtDropped
	case faultproxy.Cut:
		return fmtCut
	case faultproxy.DelayReply:
		return fmt.Sprintf(fmtDelayed, f.For)
	case faultproxy.Stall:
		return fmt.Sprintf(fmtStalled, f.For)
	}
	return fmtFaultNone
}

func on(s string) string {
	if s == "" {
		return ""
	}
	return s + " "
}

// Call: worker S calls the destination with the effect of one of its claims (Back=0 its newest),
// the destination carrying out Fault on the first attempt. An old token is a paused worker's,
// whose job may since have been reclaimed: a fencing destination refuses its lower fence.
type Call struct {
	S     string
	Back  int
	Fault faultproxy.Fault
}

func (o Call) String() string {
	s := fmtCall
	if o.Back > 0 {
		s = fmt.Sprintf(fmtCallBack, o.Back)
	}
	return on(o.S) + s + faultSuffix(o.Fault)
}
func (o Call) On() string { return o.S }
func (o Call) Applicable(w *program.World) bool {
	s := w.Session(o.S)
	if w.Dest == "" || s == nil || s.Busy {
		return false
	}
	_, ok := s.Newest(o.Back)
	return ok
}
func (o Call) Stmts(w *program.World) []program.Stmt {
	t, _ := w.Session(o.S).Newest(o.Back)
	return []program.Stmt{CallStmt{URL: w.Dest, Job: t.ID, Gen: t.Gen, Fault: o.Fault}}
}

// Count reads what the destination holds of every job.
type Count struct{ S string }

func (o Count) String() string { return on(o.S) + fmtCount }
func (o Count) On() string     { return o.S }
func (o Count) Applicable(w *program.World) bool {
	s := w.Session(o.S)
	return w.Dest != "" && s != nil && !s.Busy
}
func (o Count) Stmts(w *program.World) []program.Stmt { return []program.Stmt{CountStmt{URL: w.Dest}} }

func init() {
	faults := []struct {
		suffix string
		fault  func(v []string) (faultproxy.Fault, error)
	}{
		{fmtFaultNone, func([]string) (faultproxy.Fault, error) { return faultproxy.Fault{}, nil }},
		{fmtDropped, func([]string) (faultproxy.Fault, error) { return faultproxy.Fault{Kind: faultproxy.DropReply}, nil }},
		{fmtCut, func([]string) (faultproxy.Fault, error) { return faultproxy.Fault{Kind: faultproxy.Cut}, nil }},
		{fmtDelayed, func(v []string) (faultproxy.Fault, error) {
			d, err := time.ParseDuration(v[0])
			return faultproxy.Fault{Kind: faultproxy.DelayReply, For: d}, err
		}},
		{fmtStalled, func(v []string) (faultproxy.Fault, error) {
			d, err := time.ParseDuration(v[0])
			return faultproxy.Fault{Kind: faultproxy.Stall, For: d}, err
		}},
	}
	for _, f := range faults {
		program.Syntax(fmtCall+f.suffix, func(s string, v []string) (program.Op, error) {
			fault, err := f.fault(v)
			return Call{S: s, Fault: fault}, err
		})
		program.Syntax(fmtCallBack+f.suffix, func(s string, v []string) (program.Op, error) {
			n, err := strconv.Atoi(v[0])
			if err != nil {
				return nil, err
			}
			fault, err := f.fault(v[1:])
			return Call{S: s, Back: n, Fault: fault}, err
		})
	}
	program.Syntax(fmtCount, func(s string, _ []string) (program.Op, error) { return Count{S: s}, nil })
}
