package schedule

import (
	"fmt"
	"strings"

	"github.com/pgqcheck/pgqcheck/internal/pgerr"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/model"
)

// deadlock is a statement that Postgres aborted in a deadlock (SQLSTATE 40P01) as a finding of
// property 9 that names every statement of the cycle: the aborted one, and those of the run's
// other sessions whose backends the error's detail names, in flight or just returned. Each
// statement names its job, so the finding names the jobs.
func (r *scheduledRun) deadlock(sess *scheduledSession, st program.Stmt, err error) *model.Violation {
	named := pgerr.DeadlockPIDs(err)
	var others []string
	for _, o := range r.sessions {
		if o == sess || !named[o.client.PID()] {
			continue
		}
		other := o.last
		if o.inFlight != nil {
			other = o.inFlight.Stmt
		}
		if other != nil {
			others = append(others, fmt.Sprintf("%s's %s", o.state.Label(), describe(other)))
		}
	}
	if len(others) == 0 {
		others = []string{"a backend outside this run"}
	}
	return model.Violate(model.PNoErrors, "deadlock (SQLSTATE 40P01) between %s's %s and %s: they lock rows in opposite orders; Postgres aborted %s's",
		sess.state.Label(), describe(st), strings.Join(others, " and "), sess.state.Label())
}

// describe is a statement with the queue's file it runs, where it runs one.
func describe(st program.Stmt) string {
	if f, ok := program.FileOf(st); ok {
		return fmt.Sprintf("%s (%s)", st, f)
	}
	return st.String()
}
