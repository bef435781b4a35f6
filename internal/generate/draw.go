package generate

import (
	"time"

	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/model"
)

// Dialect is how a mode resolves what an operation runs on and names.
type Dialect int

const (
	// DialectSequential: the Prop state machine's. Sessions are the world's workers and lockers; an
	// operation on a token or a job draws among the workers holding one and the jobs enqueued,
	// and does not apply while there are none.
	DialectSequential Dialect = iota
	// DialectFuzz: FuzzQueue's. As DialectSequential, but a token's holder is any worker (the operation is
	// skipped when it does not apply), so every byte means the same in any state.
	DialectFuzz
	// DialectScheduled: a scheduled program's. Every operation runs on Session, and a job is named by
	// its position in enqueue order, since the program is drawn before it runs.
	DialectScheduled
)

// Draw is one drawing of an operation: the choices it is made from, and the mode's dialect.
type Draw struct {
	C       Chooser
	Dialect Dialect
	// W is the world the operation will run in (sequential, fuzz).
	W *program.World
	// Session is the scheduled session the operation runs on; Jobs counts the jobs its program
	// has enqueued so far (scheduled).
	Session string
	Jobs    *int
	// RealTime: the sequential property that lets real time pass (its claim transactions wait).
	RealTime bool
	// From draws one operation from another column's kinds (a suffix's real-time kind).
	From func(col Column, label string) []program.Op
}

// Choose is one choice.
func (d *Draw) Choose(lo, hi int, label string) int { return d.C.Choose(lo, hi, label) }

// Bool is a choice between false and true.
func (d *Draw) Bool(label string) bool { return Bool(d.C, label) }

// Span is one of a scale's spans; the first, the plain choice, is its shortest.
func (d *Draw) Span(label string, scale []time.Duration) time.Duration {
	return scale[d.Choose(0, len(scale)-1, label)]
}

// Worker is the worker an operation runs on.
func (d *Draw) Worker() string {
	if d.Dialect == DialectScheduled {
		return d.Session
	}
	return program.WorkerName(d.Choose(0, program.Workers-1, "worker"))
}

// Holder is a worker that holds a token, for an operation that presents or abandons one; ok is
// false when none does (sequential).
func (d *Draw) Holder() (string, bool) {
	switch d.Dialect {
	case DialectScheduled:
		return d.Session, true
	case DialectFuzz:
		return d.Worker(), true
	}
	var ws []string
	for i := 0; i < program.Workers; i++ {
		if s := d.W.Session(program.WorkerName(i)); s != nil && len(s.Tokens) > 0 {
			ws = append(ws, s.Name)
		}
	}
	if len(ws) == 0 {
		return "", false
	}
	return ws[d.Choose(0, len(ws)-1, "worker")], true
}

// Other is a worker other than w: the one that reclaims w's job.
func (d *Draw) Other(w string) string {
	i := 0
	for i < program.Workers && program.WorkerName(i) != w {
		i++
	}
	return program.WorkerName((i + 1 + d.Choose(0, program.Workers-2, "by")) % program.Workers)
}

// Locker is the session that holds a row lock.
func (d *Draw) Locker() string {
	if d.Dialect == DialectScheduled {
		return d.Session
	}
	return program.LockerName(d.Choose(0, program.Lockers-1, "locker"))
}

// Job is a job an operation names; ok is false when none is enqueued yet.
func (d *Draw) Job() (int64, bool) {
	if d.Dialect == DialectScheduled {
		return int64(d.Choose(1, *d.Jobs, "job")), true
	}
	if len(d.W.Jobs) == 0 {
		return 0, false
	}
	return d.W.Jobs[d.Choose(0, len(d.W.Jobs)-1, "job")], true
}

// Enqueued counts jobs a scheduled program enqueues, whose positions later operations name.
func (d *Draw) Enqueued(n int) {
	if d.Jobs != nil {
		*d.Jobs += n
	}
}

// Column is a mode's column of weights.
type Column int

const (
	SeqPlain    Column = iota // the Prop state machine
	SeqRealTime               // the Prop state machine of the real-time property
	Prefix                    // a scheduled program's sequential prefix
	Suffix                    // a scheduled session's operations
	RealTime                  // what a suffix's real-time kind draws from
)

// Weight is the kind's weight in a column.
func (k *Kind) Weight(col Column) int {
	return [...]int{SeqPlain: k.Seq, SeqRealTime: k.SeqRT, Prefix: k.Prefix, Suffix: k.Suffix, RealTime: k.RealTime}[col]
}

func (k *Kind) drawnOn(can model.Can) bool { return k.Needs == nil || k.Needs(can) }

// Layout is a column's kinds laid out for drawing: each as often as its weight, in the table's
// order, so that the same choice always picks the same kind.
func Layout(col Column, can model.Can) []*Kind {
	var out []*Kind
	for _, k := range Kinds {
		if !k.drawnOn(can) {
			continue
		}
		for range k.Weight(col) {
			out = append(out, k)
		}
	}
	return out
}

// Pick draws one kind of a layout.
func Pick(c Chooser, label string, layout []*Kind) *Kind {
	return layout[c.Choose(0, len(layout)-1, label)]
}

// KindNamed is the kind of that name in Kinds (nil when there is none).
func KindNamed(name string) *Kind {
	for _, k := range Kinds {
		if k.Name == name {
			return k
		}
	}
	return nil
}
