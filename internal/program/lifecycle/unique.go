package lifecycle

import (
	"context"
	"fmt"
	"strconv"

	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// EnqueueUnique: session S enqueues a job by key Key (enqueue_unique.sql), which inserts nothing
// while a job that holds the key is at no end of its life. Keys are few, so that they collide.
type EnqueueUnique struct {
	S   string
	Key int
}

const fmtUnique = "enqueue with key %d"

func (o EnqueueUnique) String() string { return on(o.S) + fmt.Sprintf(fmtUnique, o.Key) }
func (o EnqueueUnique) On() string     { return o.S }

// Applicable: where the queue has enqueue_unique.sql, and wherever an enqueue could run.
func (o EnqueueUnique) Applicable(w *program.World) bool {
	return w.Can.Unique && (program.Enqueue{S: o.S, N: 1}).Applicable(w)
}
func (o EnqueueUnique) Stmts(w *program.World) []program.Stmt {
	return []program.Stmt{UniqueStmt{Payload: w.Payload(), Key: fmt.Sprintf("k%d", o.Key)}}
}

func init() {
	program.Syntax(fmtUnique, func(s string, v []string) (program.Op, error) {
		k, err := strconv.Atoi(v[0])
		return EnqueueUnique{S: s, Key: k}, err
	})
}

// UniqueStmt enqueues a job with a payload by a key.
type UniqueStmt struct{ Payload, Key string }

func (UniqueStmt) Name() string      { return "enqueue unique" }
func (UniqueStmt) File() string      { return sut.FileUnique }
func (st UniqueStmt) String() string { return fmt.Sprintf("enqueue with key %s", st.Key) }
func (st UniqueStmt) Answer(r program.Result) string {
	switch {
	case r.Err != nil:
		return "error: " + oneLine(r.Err)
	case r.Out.Found:
		return fmt.Sprintf("id %d", r.Out.Job)
	}
	return "none: the key is held"
}
func (st UniqueStmt) Exec(ctx context.Context, s *sut.Session) program.Result {
	rep, clk, err := s.Extra(ctx, sut.FileUnique, sut.Args{Payload: st.Payload, Key: st.Key})
	return program.Result{Out: model.Output{Found: rep.Found, Job: rep.Job}, Clock: clk, Err: err}
}
func (st UniqueStmt) Judge(m *model.Queue, _ *program.Session, r program.Result, at model.Window) error {
	if r.Err != nil {
		return program.QueueError(r.Err)
	}
	return m.EnqueueUnique(at, st.Key, r.Out.Found, r.Out.Job)
}

// Apply: a job it created is known, as any enqueue's.
func (st UniqueStmt) Apply(w *program.World, s *program.Session, r program.Result, at model.Window) {
	if r.Err != nil || r.Out.Found {
		program.EnqueueStmt{}.Apply(w, s, r, at)
	}
}

// Record: an enqueue that created its job, or one that created none, which changes nothing.
func (st UniqueStmt) Record(h program.Recording, r program.Result) {
	in := model.Input{Kind: model.OpUnique, Payload: st.Payload}
	switch {
	case r.Err != nil:
		h.Failed(in, r.Err)
	case r.Out.Found:
		h.Write(in, r.Out)
	default:
		h.Read(in, r.Out)
	}
}
