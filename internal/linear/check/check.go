package check

import (
	"fmt"
	"strings"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/internal/verdict"
	"github.com/pgqcheck/pgqcheck/model"
)

// Conclusion is what the checks concluded about a history.
type Conclusion struct {
	OK bool
	// Violation is the broken promise to report first: the job whose history has no
	// linearization, else a violation seen directly while running, else the accounting.
	// Nil when OK, or when the history itself is malformed (a harness bug, see Problems).
	Violation *model.Violation
	Problems  []string // every problem found, one line each
	// Job is the job whose history is not linearizable (0: every job's is).
	Job int64
	// Explanation shows that job's operations and the longest legal order porcupine found.
	Explanation string
	// Culprit is the operation the explanation blames, as the timeline describes it.
	Culprit      string
	Inconclusive bool // the check ran out of time on some job: neither pass nor proof
	Jobs         int  // partitions checked
	Accounting   *Accounting
	// NotPromised: what the queue did that it declares it does not promise (stale completions
	// of an at-least-once queue). They fail nothing.
	NotPromised []*model.Violation
}

func (v *Conclusion) String() string {
	if v.OK {
		s := fmt.Sprintf("ok: every job's history (%d) is linearizable", v.Jobs)
		if v.Accounting != nil {
			s += "; " + v.Accounting.String()
		}
		if n := len(v.NotPromised); n > 0 {
			s += fmt.Sprintf("; not promised: %d %s observed (%s)", n, verdict.NotPromisedWhat(v.NotPromised[0].Property, n), v.NotPromised[0].Detail)
		}
		return s
	}
	if v.Violation != nil {
		return "FAIL: " + v.Violation.Error()
	}
	return "FAIL: " + strings.Join(v.Problems, "; ")
}

// SettledBudget bounds the linearizability check of a history whose recording or drain already
// broke a property: the verdict stands, and porcupine only adds which jobs and why. To show a
// job's history illegal it must try every order, which a queue that hands one job to two
// workers can make exponential in the claims whose outcome is unknown.
const SettledBudget = 10 * time.Second

// Check runs every check on a history: its shape, the violations seen while it ran,
// linearizability of each job's operations (porcupine), and, for a drained run, the
// total-queue accounting. timeout bounds the linearizability check as a whole.
func Check(h *history.History, timeout time.Duration) *Conclusion {
	v := &Conclusion{OK: true}
	if err := wellFormed(h); err != nil {
		v.OK = false
		v.Problems = append(v.Problems, "malformed history (a harness bug, not a verdict on the queue): "+err.Error())
		return v
	}
	var first []*model.Violation
	// The accounting goes first: a job lost or completed twice settles the verdict, and the
	// linearizability check then gets only SettledBudget.
	if h.Drained {
		v.Accounting = Account(h)
		v.NotPromised = v.Accounting.NotPromised
	}
	crashed := crashChecks(h)
	budget := timeout
	if len(h.Findings) > 0 || len(crashed) > 0 || v.Accounting != nil && len(v.Accounting.Problems) > 0 {
		budget = min(timeout, SettledBudget)
	}
	lin := checkLinearizable(h, budget, v)
	if lin != nil {
		first = append(first, lin)
	}
	for _, f := range h.Findings {
		v.Problems = append(v.Problems, f.Error())
		first = append(first, f)
	}
	recovery := append(crashed, inventedTokens(h)...)
	for _, p := range recovery {
		v.Problems = append(v.Problems, p.Error())
		first = append(first, p)
	}
	if v.Accounting != nil {
		for _, p := range v.Accounting.Problems {
			v.Problems = append(v.Problems, p.Error())
			first = append(first, p)
		}
	}
	if v.Inconclusive {
		v.Problems = append(v.Problems, fmt.Sprintf("the linearizability check timed out after %s: no verdict on some jobs", budget))
		if v.Explanation == "" && budget < timeout {
			var b strings.Builder
			fmt.Fprintf(&b, "porcupine found no order and no proof of none within %s; the recording and the drain saw:\n", budget)
			for _, p := range first {
				fmt.Fprintf(&b, "  %s\n", p.Error())
			}
			v.Explanation = b.String()
		}
	}
	if len(v.Problems) > 0 {
		v.OK = false
	}
	if len(first) > 0 {
		v.Violation = first[0]
	}
	return v
}

// wellFormed asserts what porcupine takes for granted: every call strictly before its return,
// and each client's operations one after another (an unknown outcome ends its client).
func wellFormed(h *history.History) error {
	last := map[int]history.Op{}
	for i, o := range h.Ops {
		if o.Return <= o.Call {
			return fmt.Errorf("operation %d (%s by %s) returns at %d, not after its call at %d", i, model.DescribeOp(o.Input, o.Output), o.Session, o.Return, o.Call)
		}
		if (o.Return == history.Never) != (o.Output.Outcome == model.Unknown) {
			return fmt.Errorf("operation %d (%s by %s): only an unknown outcome returns at +infinity", i, model.DescribeOp(o.Input, o.Output), o.Session)
		}
		// Operations of one transaction overlap: they all return when its COMMIT does; a
		// snapshot's rows are one statement's.
		observes := model.FactsOf(o.Input, o.Output).Observes
		if p, ok := last[o.Client]; ok && !observes && p.Return >= o.Call && p.Return != o.Return {
			return fmt.Errorf("client %d (%s) issued %s before its previous operation %s returned", o.Client, o.Session, model.DescribeOp(o.Input, o.Output), model.DescribeOp(p.Input, p.Output))
		}
		if !observes {
			last[o.Client] = o
		}
	}
	return nil
}
