package deploy

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/pgqcheck/pgqcheck/model"
)

// Shrunk is a violating run's smallest replay found: the fewest faults, in the shortest
// window, under which a run of the same workload broke the same promise again.
type Shrunk struct {
	Property model.Property
	Schedule Schedule
	Window   time.Duration
	Runs     int    // runs the shrinking made
	Dir      string // the last violating run's report folder, whose run.json replays it
}

func (s *Shrunk) String() string {
	var faults []string
	for _, f := range s.Schedule {
		faults = append(faults, f.String())
	}
	return fmt.Sprintf("%s again with %d faults (%v) in a %v window, after %d runs; replay: pgqcheck deploy --replay %s",
		s.Property, len(s.Schedule), faults, s.Window, s.Runs, filepath.Join(s.Dir, RunFile))
}

// Shrink looks for a smaller replay of a violating run within budget: it drops the schedule's
// faults one at a time, keeping each drop after which a run still breaks the same promise,
// then cuts the window to just after the last fault left. Every try is a real run, so a try
// that holds may only have missed (timing is not replayed): what is kept is what was seen to
// break the promise again.
func Shrink(ctx context.Context, cfg Config, res *Result, budget time.Duration, log io.Writer) (*Shrunk, error) {
	want := res.firstProperty()
	s := &Shrunk{Property: want, Schedule: res.Schedule, Window: cfg.defaults().Window, Dir: res.Dir}
	deadline := time.Now().Add(budget)
	try := func(sched Schedule, window time.Duration) (bool, error) {
		c := cfg
		c.Schedule, c.Window = append(Schedule{}, sched...), window
		r, err := Run(ctx, c)
		if err != nil {
			return false, err
		}
		s.Runs++
		if !r.OK() && r.firstProperty() == want {
			s.Dir = r.Dir
			return true, nil
		}
		return false, nil
	}
	for i := 0; i < len(s.Schedule) && time.Now().Before(deadline); {
		candidate := append(append(Schedule{}, s.Schedule[:i]...), s.Schedule[i+1:]...)
		ok, err := try(candidate, s.Window)
		if err != nil {
			return s, err
		}
		if ok {
			if log != nil {
				fmt.Fprintf(log, "shrink: still %s without %s\n", want, s.Schedule[i])
			}
			s.Schedule = candidate
			continue
		}
		i++
	}
	var end time.Duration
	for _, f := range s.Schedule {
		end = max(end, f.At+f.For)
	}
	if w := end + time.Second; w < s.Window && time.Now().Before(deadline) {
		ok, err := try(s.Schedule, w)
		if err != nil {
			return s, err
		}
		if ok {
			s.Window = w
		}
	}
	return s, nil
}

// firstProperty is the property of the run's first violation.
func (r *Result) firstProperty() model.Property {
	if !r.Verdict.OK && r.Verdict.Violation != nil {
		return r.Verdict.Violation.Property
	}
	if len(r.Observed.Findings) > 0 {
		return r.Observed.Findings[0].Violation.Property
	}
	return -1
}
