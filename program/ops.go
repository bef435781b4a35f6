package program

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"pgqcheck/model"
	"pgqcheck/sut"
)

// Op is one step of a program. String prints it the way a failure report shows it; Applicable
// says whether it makes sense in the current state (it is skipped otherwise, so that programs
// from random bytes or shrinking stay meaningful); Run performs it on the queue and the model
// and returns the queue's answer in words.
type Op interface {
	String() string
	Applicable(e *Env) bool
	Run(ctx context.Context, e *Env) (answer string, err error)
}

// Enqueue adds N jobs.
type Enqueue struct{ N int }

func (o Enqueue) String() string         { return fmt.Sprintf("enqueue %d", o.N) }
func (o Enqueue) Applicable(e *Env) bool { return o.N > 0 }
func (o Enqueue) Run(ctx context.Context, e *Env) (string, error) {
	var ids []string
	for i := 0; i < o.N; i++ {
		id, err := e.Reader.Enqueue(ctx, e.Payload())
		if err != nil {
			return strings.Join(ids, " "), queueErr(err)
		}
		ids = append(ids, fmt.Sprint(id))
		e.step.enqueued++
		if err := e.Model.Enqueue(id); err != nil {
			return strings.Join(ids, " "), err
		}
	}
	return "ids " + strings.Join(ids, " "), nil
}

// Claim: worker W claims with a lease that outlives the run.
type Claim struct{ W int }

func (o Claim) String() string         { return fmt.Sprintf("w%d claim", o.W) }
func (o Claim) Applicable(e *Env) bool { return o.W < len(e.Workers) }
func (o Claim) Run(ctx context.Context, e *Env) (string, error) {
	return claim(ctx, e, e.Workers[o.W], LongLease)
}

func claim(ctx context.Context, e *Env, w *Worker, lease time.Duration) (string, error) {
	id, gen, ok, err := w.S.Claim(ctx, lease)
	if err != nil {
		var se *sut.StatementError
		if errors.As(err, &se) && se.LockWait() {
			return "waited for a lock", model.Violate(model.PSkipLocked, "claim waited for a row lock another session holds instead of skipping the row (lock_timeout, SQLSTATE 55P03)")
		}
		return "error", queueErr(err)
	}
	answer := "none"
	if ok {
		answer = Token{id, gen}.String()
		e.step.claims++
	} else {
		e.step.empty++
	}
	if err := e.Model.Claim(e.Now, lease, ok, id, gen); err != nil {
		return answer, err
	}
	if ok {
		w.Tokens = append(w.Tokens, Token{id, gen})
	}
	return answer, nil
}

// Complete: worker W presents one of its tokens: Back=0 its newest, 1 the one before, and so on.
// An old token is a paused worker's: its job may since have been reclaimed or completed.
type Complete struct{ W, Back int }

func (o Complete) String() string {
	if o.Back == 0 {
		return fmt.Sprintf("w%d complete newest", o.W)
	}
	return fmt.Sprintf("w%d complete newest-%d", o.W, o.Back)
}

func (o Complete) token(e *Env) (Token, bool) {
	if o.W >= len(e.Workers) {
		return Token{}, false
	}
	ts := e.Workers[o.W].Tokens
	if o.Back >= len(ts) {
		return Token{}, false
	}
	return ts[len(ts)-1-o.Back], true
}

func (o Complete) Applicable(e *Env) bool {
	t, ok := o.token(e)
	return ok && !e.locked(t.ID)
}

func (o Complete) Run(ctx context.Context, e *Env) (string, error) {
	t, _ := o.token(e)
	return complete(ctx, e, e.Workers[o.W], t)
}

func complete(ctx context.Context, e *Env, w *Worker, t Token) (string, error) {
	n, err := w.S.Complete(ctx, t.ID, t.Gen)
	if err != nil {
		return "error", queueErr(err)
	}
	answer := fmt.Sprintf("%s: %d row", t, n)
	if n != 1 {
		answer += "s"
	}
	if n == 0 {
		e.step.refused++
	} else {
		e.step.accepted++
	}
	return answer, e.Model.Complete(e.Now, t.ID, t.Gen, n)
}

// Expire moves a job's lease into the past (the seed's test hook).
type Expire struct{ Job int64 }

func (o Expire) String() string { return fmt.Sprintf("expire job %d", o.Job) }
func (o Expire) Applicable(e *Env) bool {
	_, ok := e.Model.Job(o.Job)
	return ok && !e.locked(o.Job)
}
func (o Expire) Run(ctx context.Context, e *Env) (string, error) {
	if err := e.Reader.Expire(ctx, o.Job); err != nil {
		return "error", queueErr(err)
	}
	e.Model.Expire(e.Now, o.Job)
	return "", nil
}

// Pause: worker W stops past its lease (the seed's hard case). Its newest job's lease is
// expired, so another worker may reclaim it while W still holds the old token.
type Pause struct{ W int }

func (o Pause) String() string { return fmt.Sprintf("w%d pause past lease", o.W) }
func (o Pause) job(e *Env) (int64, bool) {
	if o.W >= len(e.Workers) || len(e.Workers[o.W].Tokens) == 0 {
		return 0, false
	}
	ts := e.Workers[o.W].Tokens
	return ts[len(ts)-1].ID, true
}
func (o Pause) Applicable(e *Env) bool {
	id, ok := o.job(e)
	return ok && Expire{Job: id}.Applicable(e)
}
func (o Pause) Run(ctx context.Context, e *Env) (string, error) {
	id, _ := o.job(e)
	a, err := Expire{Job: id}.Run(ctx, e)
	if a == "" {
		a = fmt.Sprintf("job %d's lease expired", id)
	}
	return a, err
}

// Compound is an operation made of simpler ones in a fixed order. It exists to make a scenario
// likely in random programs; Env.Step runs, checks and traces its parts one by one.
type Compound interface {
	Op
	Parts() []Op
}

// runParts runs a compound's parts in order, joining their answers.
func runParts(ctx context.Context, e *Env, c Compound) (string, error) {
	var answers []string
	for _, op := range c.Parts() {
		a, err := op.Run(ctx, e)
		if a != "" {
			answers = append(answers, a)
		}
		if err != nil {
			return strings.Join(answers, "; "), err
		}
	}
	return strings.Join(answers, "; "), nil
}

// Overslept: worker W pauses past its lease and, before anyone reclaims the job, resumes and
// completes it: the completion must be refused (the lease ran out).
type Overslept struct{ W int }

func (o Overslept) String() string         { return fmt.Sprintf("w%d pause past lease, then complete", o.W) }
func (o Overslept) Parts() []Op            { return []Op{Pause{W: o.W}, Complete{W: o.W}} }
func (o Overslept) Applicable(e *Env) bool { return Pause{W: o.W}.Applicable(e) }
func (o Overslept) Run(ctx context.Context, e *Env) (string, error) {
	return runParts(ctx, e, o)
}

// Replaced is the seed's hard case: worker W pauses past its lease, worker By claims (and so
// reclaims W's job when it is next in line), then W resumes and completes with its old
// generation: a fenced queue refuses it.
type Replaced struct{ W, By int }

func (o Replaced) String() string {
	return fmt.Sprintf("w%d pause past lease, w%d claim, w%d complete", o.W, o.By, o.W)
}
func (o Replaced) Parts() []Op { return []Op{Pause{W: o.W}, Claim{W: o.By}, Complete{W: o.W}} }
func (o Replaced) Applicable(e *Env) bool {
	return o.By != o.W && o.By < len(e.Workers) && Pause{W: o.W}.Applicable(e)
}
func (o Replaced) Run(ctx context.Context, e *Env) (string, error) {
	return runParts(ctx, e, o)
}

// Lock: locker L opens a transaction and row-locks a job, as the seed's manual-locker does.
type Lock struct {
	L   int
	Job int64
}

func (o Lock) String() string { return fmt.Sprintf("locker%d lock job %d", o.L, o.Job) }
func (o Lock) Applicable(e *Env) bool {
	_, ok := e.Model.Job(o.Job)
	return e.CanLock() && o.L < len(e.Lockers) && e.Lockers[o.L].Job == 0 && ok && !e.locked(o.Job)
}
func (o Lock) Run(ctx context.Context, e *Env) (string, error) {
	l := e.Lockers[o.L]
	if err := l.S.Begin(ctx); err != nil {
		return "error", &HarnessError{err}
	}
	if err := l.S.Lock(ctx, o.Job); err != nil {
		_ = l.S.Rollback(ctx)
		return "error", queueErr(err)
	}
	l.Job = o.Job
	e.Model.Lock(o.Job)
	return "", nil
}

// How a locker's transaction ends.
type How int

const (
	Commit How = iota
	Rollback
	Cancel    // pg_cancel_backend while it sleeps in pg_sleep; the client then rolls back
	Terminate // pg_terminate_backend; the lock goes when the backend exits
)

var howNames = [...]string{"commit", "rollback", "cancel", "terminate"}

func (h How) String() string { return howNames[h] }

// Release ends locker L's transaction.
type Release struct {
	L   int
	How How
}

func (o Release) String() string { return fmt.Sprintf("locker%d %s", o.L, o.How) }
func (o Release) Applicable(e *Env) bool {
	return o.L < len(e.Lockers) && e.Lockers[o.L].Job != 0 && o.How <= Terminate
}
func (o Release) Run(ctx context.Context, e *Env) (string, error) {
	l := e.Lockers[o.L]
	if err := release(ctx, e.In, l, o.How); err != nil {
		return "error", &HarnessError{err}
	}
	e.Model.Unlock(l.Job)
	l.Job = 0
	if o.How == Terminate {
		s, err := e.connect(ctx, fmt.Sprintf("locker%d", o.L))
		if err != nil {
			return "error", &HarnessError{err}
		}
		l.S = s
	}
	return "", nil
}

func release(ctx context.Context, in *sut.Installed, l *Locker, how How) error {
	switch how {
	case Commit:
		return l.S.Commit(ctx)
	case Rollback:
		return l.S.Rollback(ctx)
	case Cancel:
		done := make(chan error, 1)
		go func() { done <- l.S.Sleep(ctx, time.Hour) }()
		if err := in.WaitFor(ctx, l.S.PID, "PgSleep"); err != nil {
			_ = in.Cancel(ctx, l.S.PID)
			<-done
			return err
		}
		if err := in.Cancel(ctx, l.S.PID); err != nil {
			return err
		}
		if err := <-done; err == nil {
			return fmt.Errorf("pg_sleep was not cancelled")
		}
		return l.S.Rollback(ctx)
	case Terminate:
		pid := l.S.PID
		if err := in.Terminate(ctx, pid); err != nil {
			return err
		}
		l.S.Close()
		return nil
	}
	return fmt.Errorf("unknown release %d", how)
}

// Crash: worker W dies and forgets every token it held; its jobs wait for their leases.
type Crash struct{ W int }

func (o Crash) String() string         { return fmt.Sprintf("w%d crash", o.W) }
func (o Crash) Applicable(e *Env) bool { return o.W < len(e.Workers) && len(e.Workers[o.W].Tokens) > 0 }
func (o Crash) Run(ctx context.Context, e *Env) (string, error) {
	e.Workers[o.W].Tokens = nil
	return "", nil
}

// ShortLease: worker W claims with a real 1 s lease, then completes either at once (Late=false:
// must succeed) or after pausing past the lease (Late=true: must be refused). This is the only
// operation where real time passes; it checks that leases run on the database clock.
type ShortLease struct {
	W    int
	Late bool
}

func (o ShortLease) String() string {
	if o.Late {
		return fmt.Sprintf("w%d claim %s lease, pause %s, complete", o.W, ShortLeaseLen, LatePause)
	}
	return fmt.Sprintf("w%d claim %s lease, complete at once", o.W, ShortLeaseLen)
}
func (o ShortLease) Applicable(e *Env) bool { return o.W < len(e.Workers) }
func (o ShortLease) Run(ctx context.Context, e *Env) (string, error) {
	w := e.Workers[o.W]
	start := time.Now()
	answer, err := claim(ctx, e, w, ShortLeaseLen)
	if err != nil || answer == "none" {
		return answer, err
	}
	if o.Late {
		time.Sleep(LatePause)
		e.Now += LatePause
	} else if d := time.Since(start); d > EarlyBudget {
		return answer, &HarnessError{fmt.Errorf("timing noise: the early completion came %v after its claim, past the %v budget", d.Round(time.Millisecond), EarlyBudget)}
	}
	a2, err := complete(ctx, e, w, w.Tokens[len(w.Tokens)-1])
	return answer + "; " + a2, err
}

// Drain: every lease lapses (expire on each running, unlocked job), then worker W claims and
// completes until the queue answers none. Afterwards every unlocked job must be done, each
// completed exactly once (property 6).
type Drain struct{ W int }

func (o Drain) String() string         { return fmt.Sprintf("w%d drain", o.W) }
func (o Drain) Applicable(e *Env) bool { return o.W < len(e.Workers) }
func (o Drain) Run(ctx context.Context, e *Env) (string, error) {
	for _, j := range e.Model.Jobs() {
		if j.State == model.Running && !j.Locked {
			if err := e.Reader.Expire(ctx, j.ID); err != nil {
				return "error", queueErr(err)
			}
			e.Model.Expire(e.Now, j.ID)
		}
	}
	w := e.Workers[o.W]
	done := 0
	for i := 0; i <= e.Model.Len(); i++ {
		a, err := claim(ctx, e, w, LongLease)
		if err != nil {
			return fmt.Sprintf("%d completed, then claim -> %s", done, a), err
		}
		if a == "none" {
			break
		}
		if a, err := complete(ctx, e, w, w.Tokens[len(w.Tokens)-1]); err != nil {
			return fmt.Sprintf("%d completed, then %s", done, a), err
		}
		done++
	}
	for _, j := range e.Model.Jobs() {
		if !j.Locked && (j.State != model.Done || e.Model.Completions(j.ID) > 1) {
			return fmt.Sprintf("%d completed", done), model.Violate(model.PRecovery, "after every lease lapsed and the queue drained, job %d is %s with %d completions", j.ID, j.State, e.Model.Completions(j.ID))
		}
	}
	return fmt.Sprintf("%d completed", done), nil
}

func (e *Env) locked(id int64) bool {
	j, ok := e.Model.Job(id)
	return ok && j.Locked
}
