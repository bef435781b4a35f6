package schedule

import (
	"github.com/pgqcheck/pgqcheck/internal/generate"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// capabilities is what the queue ships beyond the contract's core: kinds that need a file it
// lacks are not drawn.
func capabilities(q *sut.Queue) model.Can { return q.Can() }

// drawnProgram is a drawn scheduled program: a prefix run one operation at a time, then one
// suffix per session run concurrently under the drawn schedule. A suffix's length is drawn up
// front and each of its operations when the session starts it, so a failing program shows
// only what ran. The kinds and their weights are the generator's configuration
// (generate.Kinds).
type drawnProgram struct {
	prefix        []program.Op
	suffixLengths []int // operations each session's suffix holds
	jobs          int   // enqueues drawn so far: job ids are 1, 2, ...
	can           model.Can
}

// drawOp draws one operation of session s from a column of kinds, as the operations it runs.
func (p *drawnProgram) drawOp(c chooser, label string, col generate.Column, s string) []program.Op {
	k := generate.Pick(c, label, generate.Layout(col, p.can))
	return k.Draw(&generate.Draw{C: c, Dialect: generate.DialectScheduled, Session: s, Jobs: &p.jobs,
		From: func(col generate.Column, label string) []program.Op { return p.drawOp(c, label, col, s) }})
}

// next draws the next operation of a session's suffix.
func (p *drawnProgram) next(c chooser, session int) []program.Op {
	return p.drawOp(c, opLabel(session), generate.Suffix, program.ScheduledSession(session))
}

// drawProgram draws the sessions, the prefix, and the suffixes' lengths. A queue without
// lock.sql gets no lockers, one without rescue.sql no rescues.
func drawProgram(c chooser, cfg Config, can model.Can) *drawnProgram {
	p := &drawnProgram{can: can}
	n := c.Choose(2, max(2, cfg.Sessions), "sessions")
	p.jobs = c.Choose(1, 5, "jobs")
	for i := 0; i < p.jobs; i++ {
		p.prefix = append(p.prefix, program.Enqueue{S: program.ScheduledSession(0), N: 1})
	}
	// Sessions that hold a token when the concurrent part starts are what stale completions
	// are made of.
	for s := 0; s < n; s++ {
		if chooseBool(c, "prefix claim") {
			p.prefix = append(p.prefix, program.Claim{S: program.ScheduledSession(s)})
		}
	}
	for i, k := 0, c.Choose(0, cfg.MaxPrefix, labelPrefixCount); i < k; i++ {
		s := c.Choose(0, n-1, labelPrefixSession)
		p.prefix = append(p.prefix, p.drawOp(c, "prefix op", generate.Prefix, program.ScheduledSession(s))...)
	}
	for s := 0; s < n; s++ {
		p.suffixLengths = append(p.suffixLengths, c.Choose(1, cfg.MaxSuffix, labelSuffix))
	}
	return p
}
