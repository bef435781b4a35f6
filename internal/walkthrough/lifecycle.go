package walkthrough

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/pgqcheck/pgqcheck/sut"
)

// The lifecycle's scenarios, run where the queue ships what they need (fail.sql, renew.sql,
// effect.sql with effects.sql): the seed's advice on retries, leases and business effects, put
// to the test in its evidence format.

// Scenario names.
const (
	ScenarioRetries = "retries"
	ScenarioRenewal = "renewal"
	ScenarioEffect  = "effect"
)

// Assertion names of the lifecycle's scenarios.
const (
	AssertFirstAttempt = "claim takes job 1 for its first attempt"
	AssertFailAccepted = "the owner's failure changes 1 row"
	AssertBackoffWaits = "claim while job 1 waits out its backoff skips it for job 2"
	AssertRetried      = "claim after the backoff retries the job as the next generation"
	AssertDeadKept     = "after its last attempt fails the job is dead, its attempts counted and its error kept"
	AssertDeadStays    = "claim after the job died returns no row"
	AssertRenewed      = "the slow worker's renewal changes 1 row"
	AssertRenewSkips   = "another worker's claim past the first lease's end skips the renewed job"
	AssertRenewedWins  = "the slow worker's completion after its renewal changes 1 row"
	AssertStaleRefused = "the stale worker's completion, after its effect, changes 0 rows"
	AssertEffectGone   = "after its rollback the stale worker's effect is gone"
	AssertOwnerEffect  = "the current owner's completion with its effect commits one effect"
)

// Failure is the error text the retries scenario reports for attempt n.
func Failure(n int) string { return fmt.Sprintf("payment gateway timeout (attempt %d)", n) }

// lifecycleScenarios are the lifecycle's scenarios the queue can run.
func lifecycleScenarios(q *sut.Queue) []scenario {
	var out []scenario
	if q.Can().Fail && q.Shape().Life.MaxAttempts > 0 && !q.Shape().Life.AttemptsAtClaim && !q.Shape().NoGeneration {
		out = append(out, scenario{ScenarioRetries, "a job fails until its attempt limit, each retry after its backoff, and ends dead with its error kept", retriesScenario})
	}
	if q.Can().Renew && !q.Shape().NoGeneration && q.FixedLease == 0 {
		out = append(out, scenario{ScenarioRenewal, "a renewal keeps a slow worker's lease past its first end while another worker's claim skips the job", renewalScenario})
	}
	if q.Can().Effect && !q.Shape().NoGeneration {
		out = append(out, scenario{ScenarioEffect, "a stale worker's business effect rolls back with its refused completion; the owner's commits once", effectScenario})
	}
	return out
}

func retriesScenario(ctx context.Context, l *lab) error {
	lab, err := l.session(ctx, "lab")
	if err != nil {
		return err
	}
	if err := l.enqueueBoth(ctx, lab); err != nil {
		return err
	}
	lc := l.in.Queue.Shape().Life
	for n := 1; n <= int(lc.MaxAttempts); n++ {
		want := fmt.Sprintf("%d|%d", l.id1, n)
		if n > 1 {
			// The job is due once its backoff ended; the harness waits out the declared one.
			time.Sleep(lc.BackoffAfter(int64(n-1)) + 50*time.Millisecond)
			l.assert(AssertRetried, want, l.claim(ctx, lab, ""))
		} else {
			l.assert(AssertFirstAttempt, want, l.claim(ctx, lab, ""))
		}
		r := l.exec(ctx, "lab", lab.Conn(), l.in.Queue.Fail, l.id1, int64(n), true, Failure(n))
		l.assert(AssertFailAccepted, "1", outOrErr(r))
		if n == 1 {
			// Job 2 is the only one due: the claim takes it, and job 1 waits.
			l.assert(AssertBackoffWaits, fmt.Sprintf("%d|1", l.id2), l.claim(ctx, lab, ""))
		}
	}
	snap := l.exec(ctx, "lab", lab.Conn(), l.in.Queue.Snapshot)
	l.assert(AssertDeadKept, fmt.Sprintf("%d|dead|%d|f|%d|%s", l.id1, lc.MaxAttempts, lc.MaxAttempts, Failure(int(lc.MaxAttempts))), firstLine(outOrErr(snap)))
	time.Sleep(lc.BackoffAfter(lc.MaxAttempts) + 50*time.Millisecond)
	l.assert(AssertDeadStays, NoRows, l.claim(ctx, lab, ""))
	l.note("Job %d failed %d times; each retry came only after its backoff (%v, then doubling), and its last failure made it dead with the error it reported kept, so an operator can tell a dependency that stayed down from invalid input.", l.id1, lc.MaxAttempts, lc.Backoff)
	return nil
}

// renewLease is the renewal scenario's lease: short enough that its end passes in the scenario.
const renewLease = time.Second

func renewalScenario(ctx context.Context, l *lab) error {
	slow, err := l.session(ctx, "slow")
	if err != nil {
		return err
	}
	other, err := l.session(ctx, "other")
	if err != nil {
		return err
	}
	if err := l.enqueueOne(ctx, slow); err != nil {
		return err
	}
	begin := time.Now()
	l.assert(AssertFirstAttempt, fmt.Sprintf("%d|1", l.id1), outOrErr(l.exec(ctx, "slow", slow.Conn(), l.in.Queue.Claim, renewLease)))
	time.Sleep(renewLease * 6 / 10)
	l.assert(AssertRenewed, "1", outOrErr(l.exec(ctx, "slow", slow.Conn(), l.in.Queue.Renew, l.id1, int64(1), renewLease)))
	time.Sleep(renewLease*12/10 - time.Since(begin))
	l.assert(AssertRenewSkips, NoRows, outOrErr(l.exec(ctx, "other", other.Conn(), l.in.Queue.Claim, renewLease)))
	l.assert(AssertRenewedWins, "1", outOrErr(l.exec(ctx, "slow", slow.Conn(), l.in.Queue.Complete, l.id1, int64(1))))
	l.note("The slow worker's lease of %v would have ended %v after its claim; its renewal at %v moved the end a lease from then, so another worker's claim at %v skipped the job and the slow worker completed it.", renewLease, renewLease, renewLease*6/10, time.Since(begin).Round(time.Millisecond))
	return nil
}

func effectScenario(ctx context.Context, l *lab) error {
	stale, err := l.session(ctx, "stale")
	if err != nil {
		return err
	}
	owner, err := l.session(ctx, "owner")
	if err != nil {
		return err
	}
	if err := l.enqueueOne(ctx, stale); err != nil {
		return err
	}
	q := l.in.Queue
	l.assert(AssertFirstAttempt, fmt.Sprintf("%d|1", l.id1), outOrErr(l.exec(ctx, "stale", stale.Conn(), q.Claim, Lease)))
	if r := l.exec(ctx, "stale", stale.Conn(), q.Expire, l.id1); r.err != nil {
		return fmt.Errorf("pgqcheck: expire.sql failed: %s", errText(r.err))
	}
	l.assert(AssertReclaim, fmt.Sprintf("%d|2", l.id1), outOrErr(l.exec(ctx, "owner", owner.Conn(), q.Claim, Lease)))
	if err := l.withEffect(ctx, "stale", stale, 1, AssertStaleRefused, "0"); err != nil {
		return err
	}
	l.assert(AssertEffectGone, NoRows, outOrErr(l.exec(ctx, "owner", owner.Conn(), q.Effects)))
	if err := l.withEffect(ctx, "owner", owner, 2, AssertCurrentWins, "1"); err != nil {
		return err
	}
	l.assert(AssertOwnerEffect, fmt.Sprintf("%d|1", l.id1), outOrErr(l.exec(ctx, "owner", owner.Conn(), q.Effects)))
	l.note("The stale worker wrote its business effect and then presented generation 1 in the same transaction; the completion changed 0 rows, so the transaction rolled back and took the effect with it. The owner's transaction, with generation 2, committed exactly one effect.")
	return nil
}

// withEffect runs a completion with its business effect in one transaction, the effect first,
// and commits only when the completion changed one row.
func (l *lab) withEffect(ctx context.Context, who string, s *sut.Session, gen int64, assertion, want string) error {
	q := l.in.Queue
	for _, st := range []struct {
		sql  string
		args []any
	}{{"BEGIN", nil}, {q.Effect, []any{l.id1}}} {
		if r := l.exec(ctx, who, s.Conn(), st.sql, st.args...); r.err != nil {
			return fmt.Errorf("pgqcheck: %s's %s failed: %s", who, brief(st.sql, nil), errText(r.err))
		}
	}
	r := l.exec(ctx, who, s.Conn(), q.Complete, l.id1, gen)
	l.assert(assertion, want, outOrErr(r))
	end := "ROLLBACK"
	if r.err == nil && r.out == "1" {
		end = "COMMIT"
	}
	if r := l.exec(ctx, who, s.Conn(), end); r.err != nil {
		return fmt.Errorf("pgqcheck: %s's %s failed: %s", who, end, errText(r.err))
	}
	return nil
}

// enqueueOne adds the seed's first job and remembers its id.
func (l *lab) enqueueOne(ctx context.Context, s *sut.Session) error {
	r := l.exec(ctx, "lab", s.Conn(), l.in.Queue.Enqueue, l.enqueueArgs(Payload1)...)
	if r.err != nil {
		return fmt.Errorf("pgqcheck: enqueue.sql failed: %s", errText(r.err))
	}
	_, err := fmt.Sscan(r.out, &l.id1)
	if err != nil {
		return fmt.Errorf("pgqcheck: enqueue.sql returned %q, not one id", r.out)
	}
	return nil
}

// enqueueArgs are enqueue.sql's parameters for a payload: with a run-at delay of none where
// the queue takes one.
func (l *lab) enqueueArgs(payload string) []any {
	if l.in.Queue.Can().Delay {
		return []any{payload, time.Duration(0)}
	}
	return []any{payload}
}

func firstLine(s string) string { return strings.SplitN(s, "\n", 2)[0] }
