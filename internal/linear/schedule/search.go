package schedule

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/verdict"

	"pgregory.net/rapid"

	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/rapidrun"
	"github.com/pgqcheck/pgqcheck/internal/textfmt"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// Search runs scheduled mode outside `go test`, with rapid's usual checks and
// shrinking. It returns nil when every check passed; an error when the harness failed rather
// than the queue. The sessions it opens are closed before it returns.
func Search(ctx context.Context, in *sut.Installed, name string, cfg Config) (*verdict.Finding, error) {
	s := NewScheduler(ctx, in, cfg)
	defer s.Close()
	out, failed := rapidrun.Check(name, s.Property)
	return s.outcome(out, failed)
}

// outcome is what a run outside `go test` came to: the last failing run's finding (rapid ends
// by replaying its shrunk case), or the harness's failure.
func (s *Scheduler) outcome(out string, failed bool) (*verdict.Finding, error) {
	switch {
	case !failed:
		return nil, nil
	case s.last == nil:
		return nil, fmt.Errorf("harness: %s", textfmt.OneLine(out))
	}
	return s.last, nil
}

// ReplayInput runs scheduled mode once, outside `go test`, with the choices of a FuzzScheduled
// input. It returns nil when the run held.
func ReplayInput(ctx context.Context, in *sut.Installed, name string, cfg Config, data []byte) (*verdict.Finding, error) {
	s := NewScheduler(ctx, in, cfg)
	defer s.Close()
	return s.replayInput(name, data)
}

// ReplayInput runs one fuzz input outside `go test` on s's sessions: nil when the run held.
// Replays on one scheduler learn from each other how late a statement after a pause to a
// lease's edge lands (Landings).
func (s *Scheduler) ReplayInput(name string, data []byte) (*verdict.Finding, error) {
	return s.replayInput(name, data)
}

func (s *Scheduler) replayInput(name string, data []byte) (*verdict.Finding, error) {
	return s.outcome(rapidrun.Run(name, func(t rapid.TB) { s.RunBytes(t, data) }))
}

// ReplayProgram runs a saved scheduled program once, outside `go test`. It returns nil when
// the run held.
func ReplayProgram(ctx context.Context, in *sut.Installed, cfg Config, p *program.Program) (*verdict.Finding, error) {
	s := NewScheduler(ctx, in, cfg)
	defer s.Close()
	return s.replayProgram(p)
}

// ReplayProgram runs a saved scheduled program once, outside `go test`, on s's sessions: nil
// when the run held (Trace then shows what it did).
func (s *Scheduler) ReplayProgram(p *program.Program) (*verdict.Finding, error) {
	return s.replayProgram(p)
}

func (s *Scheduler) replayProgram(p *program.Program) (*verdict.Finding, error) {
	s.trace = ""
	return s.outcome(rapidrun.Run("replay", func(t rapid.TB) { s.RunProgram(t, p) }))
}

// Reduce removes every operation of a scheduled finding's program that its failure
// does not need (the one reducer, verdict.Reduce), within budget, and returns the smallest
// failing run's finding, its report folder left in place.
func Reduce(ctx context.Context, in *sut.Installed, cfg Config, f *verdict.Finding, budget time.Duration) *verdict.Finding {
	s := NewScheduler(ctx, in, cfg)
	defer s.Close()
	header := f.Program.Header
	run := func(ops []program.Op) error {
		g, err := s.replayProgram(&program.Program{Header: header, Ops: ops})
		switch {
		case err != nil:
			return &program.HarnessError{Err: err}
		case g == nil:
			return nil
		}
		return g.Violation
	}
	ops, err := verdict.Reduce(ctx, f.Program.Ops, budget, run)
	var v *model.Violation
	if !errors.As(err, &v) || v.Property != f.Property() {
		return f
	}
	g, _ := s.replayProgram(&program.Program{Header: header, Ops: ops})
	if g == nil || g.Property() != f.Property() {
		return f
	}
	g.FuzzInput = f.FuzzInput
	return g
}
