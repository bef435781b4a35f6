package schedule

import (
	"context"
	"fmt"

	"github.com/pgqcheck/pgqcheck/internal/verdict"

	"pgregory.net/rapid"

	"github.com/pgqcheck/pgqcheck/internal/faultproxy"
	"github.com/pgqcheck/pgqcheck/internal/linear/check"
	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/internal/linear/record"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/sut"
)

// Scheduler runs scheduled programs against one installed queue: it decides which session
// moves next, sees statements wait for row locks in Postgres (pg_blocking_pids) rather than
// guessing with sleeps, and injects the faults the program names. Its clients record the
// history; the operations are the program package's. Its sessions survive from one run to the
// next (a run costs a reset, not connections). It is not safe for concurrent use.
type Scheduler struct {
	ctx     context.Context
	in      *sut.Installed
	cfg     Config
	clients []*record.Client
	proxy   *faultproxy.Proxy // every session connects through it, for the drawn proxy faults
	last    *verdict.Finding  // the last failing run's
	// lastMarks locate the last failing run's choices in its fuzz input, for ShrinkInput.
	lastMarks []mark
	// trace is the last run's interleaving with the queue's answers, held or not.
	trace string
	// lastHistory and lastProgram are the last run's history and the program that replays
	// it, held or not.
	lastHistory *history.History
	lastProgram *program.Program
	// Counts is what the last run's history exercised.
	Counts program.Counts
	// approach carries how late a statement after a pause to a lease's edge lands from one run
	// to the next (each run has a world of its own); landings are the last run's.
	approach program.Approach
	landings []program.Landing
}

// Landings are where the last run's statements after its pauses to just before a lease's edge
// ran, against where the pauses aimed them.
func (s *Scheduler) Landings() []program.Landing { return s.landings }

// Trace is the last run's interleaving with the queue's answers, whether it held or failed.
func (s *Scheduler) Trace() string { return s.trace }

// Program is the last run's interleaving as a program: what was drawn, whatever the run's
// timing made of it.
func (s *Scheduler) Program() *program.Program { return s.lastProgram }

// NewScheduler prepares scheduled mode for an installed queue. Close it when done.
func NewScheduler(ctx context.Context, in *sut.Installed, cfg Config) *Scheduler {
	return &Scheduler{ctx: ctx, in: in, cfg: cfg.withDefaults(in.Queue)}
}

// Last is the last failing run's finding: after a rapid search, the shrunk failure's (rapid
// ends by replaying it), or, when that replay held, the last run that failed. Nil when no run
// failed.
func (s *Scheduler) Last() *verdict.Finding { return s.last }

// Close ends every session, whatever it was doing, and the fault proxy.
func (s *Scheduler) Close() {
	for _, c := range s.clients {
		c.Close()
	}
	if s.proxy != nil {
		s.proxy.Close()
	}
}

// Property is the rapid property of scheduled mode: draw a program and a schedule, run them,
// drain the queue, and check the history. It fails with the broken property.
func (s *Scheduler) Property(t *rapid.T) { s.run(t, &rapidChoices{t: t}, nil) }

// RunBytes is one run of scheduled mode whose choices come from data (FuzzScheduled's input),
// one byte a choice, as Property's would come from rapid. It fails t with the broken property.
func (s *Scheduler) RunBytes(t verdict.Failer, data []byte) { s.run(t, &byteChoices{data: data}, nil) }

// RunProgram runs a saved scheduled program: its lines are the interleaving. It fails t with
// the broken property.
func (s *Scheduler) RunProgram(t verdict.Failer, p *program.Program) { s.run(t, nil, p) }

// run is one scheduled run: a program drawn through c, or a saved one replayed (c nil), then
// the drain and the checks. It fails t with the broken property.
func (s *Scheduler) run(t verdict.Failer, c chooser, saved *program.Program) {
	t.Helper()
	var d *drawnProgram
	n := 0
	if saved != nil {
		n = saved.ScheduledSessions()
	} else {
		d = drawProgram(c, s.cfg, capabilities(s.in.Queue))
		n = len(d.suffixLengths)
	}
	r := &scheduledRun{scheduler: s, t: t, choices: c, rec: history.NewRecorder(true), sessionCount: n}
	s.Counts, s.lastHistory, s.lastProgram = program.Counts{}, nil, nil
	// Under rapid, a failure stands until a later run fails: with real time, rapid's replay of
	// a failing run may hold (which statement lands first past a lease's edge depends on the
	// run's own timing), and what the failing run saw is a broken promise all the same, since
	// the model judges only by measured windows. A replay of one input or program stands alone.
	if _, searching := c.(*rapidChoices); !searching {
		s.last = nil
	}
	defer r.abandon()
	defer func() {
		if r.world != nil {
			s.approach, s.landings = r.world.Approach.Carry(), r.world.Approach.Landings
		}
	}()
	if err := r.start(n); err != nil {
		s.last = nil
		t.Fatalf("harness: %v", err)
	}
	if saved != nil {
		r.replay(saved)
	} else {
		r.runDrawn(d)
	}
	r.drain()
	h := r.rec.History(s.in.Queue.Source, "scheduled")
	h.Shape = s.in.Queue.Shape()
	h.Drained = true
	h.Program = r.listing()
	s.trace, s.lastHistory, s.lastProgram = h.Program, h, r.asProgram(nil)
	s.Counts = check.CountOps(h)
	s.Counts.RealPauses, s.Counts.PausedMillis = int64(r.pauses), r.slept.Milliseconds()
	if r.world != nil {
		s.Counts.EdgeLandings = r.world.Approach.Aimed()
	}
	v := check.Check(h, s.cfg.CheckTimeout)
	s.Counts.NotPromised = int64(len(v.NotPromised))
	if s.cfg.Trace != nil {
		fmt.Fprintf(s.cfg.Trace, "%s%s\n\n", h.Program, v)
	}
	if !v.OK {
		r.fail(v.Violation, v, h)
	}
}
