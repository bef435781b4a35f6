package linear

import (
	"fmt"
	"strings"
)

// Scheduled mode: rapid draws a sequential prefix and two or three concurrent suffixes of
// operations, then, one step at a time, which session issues its next statement. A statement
// that waits for a lock is seen waiting (pg_blocking_pids), not guessed at with a sleep, and
// the schedule moves on to another session. The same draw always gives the same interleaving,
// the same history and the same verdict, so rapid can replay a failure and shrink it.

// sopKind is an operation of a scheduled program.
type sopKind int

const (
	sopEnqueue  sopKind = iota
	sopClaim            // claim, autocommit
	sopComplete         // present one of the session's tokens
	sopExpire           // the expire test hook on a job
	sopSnapshot         // read every row
	sopClaimTxn         // BEGIN; claim; [complete it]; COMMIT or ROLLBACK
	sopLockTxn          // BEGIN; lock a job's row; COMMIT or ROLLBACK, as the seed's manual-locker
)

// sop is one operation of a scheduled program.
type sop struct {
	Kind sopKind
	Job  int64 // expire, lock: the job id (ids are 1, 2, ... in enqueue order); expire 0: see Back
	// Back: complete presents the session's newest token (0), the one before (1)...; an expire
	// with no Job ends the lease of the job of the newest claim any session made (0), or of an
	// earlier one.
	Back     int
	Commit   bool // transactions: COMMIT, else ROLLBACK
	Complete bool // claim transaction: complete the claimed job before the end
}

func (o sop) String() string {
	end := "rollback"
	if o.Commit {
		end = "commit"
	}
	switch o.Kind {
	case sopEnqueue:
		return "enqueue"
	case sopClaim:
		return "claim"
	case sopComplete:
		if o.Back == 0 {
			return "complete newest"
		}
		return fmt.Sprintf("complete newest-%d", o.Back)
	case sopExpire:
		if o.Job == 0 {
			if o.Back == 0 {
				return "expire the newest claim's job"
			}
			return fmt.Sprintf("expire the job of the newest claim-%d", o.Back)
		}
		return fmt.Sprintf("expire job %d", o.Job)
	case sopSnapshot:
		return "snapshot"
	case sopClaimTxn:
		if o.Complete {
			return "begin; claim; complete it; " + end
		}
		return "begin; claim; " + end
	case sopLockTxn:
		return fmt.Sprintf("begin; lock job %d; %s", o.Job, end)
	}
	return "?"
}

// statements expands an operation into the statements the scheduler issues one per step.
func (o sop) statements() []stmt {
	end := stmt{kind: sRollback}
	if o.Commit {
		end = stmt{kind: sCommit}
	}
	switch o.Kind {
	case sopEnqueue:
		return []stmt{{kind: sEnqueue}}
	case sopClaim:
		return []stmt{{kind: sClaim}}
	case sopComplete:
		return []stmt{{kind: sComplete, back: o.Back}}
	case sopExpire:
		return []stmt{{kind: sExpire, job: o.Job, back: o.Back}}
	case sopSnapshot:
		return []stmt{{kind: sSnapshot}}
	case sopClaimTxn:
		if o.Complete {
			return []stmt{{kind: sBegin}, {kind: sClaim}, {kind: sComplete, back: 0, inTxnOnly: true}, end}
		}
		return []stmt{{kind: sBegin}, {kind: sClaim}, end}
	case sopLockTxn:
		return []stmt{{kind: sBegin}, {kind: sLock, job: o.Job}, end}
	}
	return nil
}

// program is a drawn scheduled program: a prefix run one operation at a time, then one
// suffix per session run concurrently under the drawn schedule. A suffix's length is drawn up
// front and each of its operations when the session starts it, so a failing program shows
// only what ran, and the shrinker need not remove what never did.
type program struct {
	prefix   []prefixOp
	lengths  []int   // operations each session's suffix holds
	suffixes [][]sop // the operations drawn so far
	jobs     int     // enqueues drawn so far: job ids are 1, 2, ...
	kinds    []sopKind
}

type prefixOp struct {
	session int
	op      sop
}

func (p *program) String() string {
	var b strings.Builder
	b.WriteString("prefix (one at a time):\n")
	for _, po := range p.prefix {
		fmt.Fprintf(&b, "  %s: %s\n", sessionName(po.session), po.op)
	}
	b.WriteString("concurrent:\n")
	for i, s := range p.suffixes {
		ops := make([]string, len(s))
		for j, o := range s {
			ops[j] = o.String()
		}
		if n := p.lengths[i] - len(s); n > 0 {
			ops = append(ops, fmt.Sprintf("(%d not started)", n))
		}
		fmt.Fprintf(&b, "  %s: %s\n", sessionName(i), strings.Join(ops, " | "))
	}
	return b.String()
}

func sessionName(i int) string { return fmt.Sprintf("s%d", i) }

// The weights favour what races are made of: claims, transactions held open across other
// sessions' steps, expiries of jobs just claimed, and completions of older tokens.
var (
	sequentialKinds = []sopKind{sopClaim, sopClaim, sopComplete, sopExpire, sopExpire, sopEnqueue}
	concurrentKinds = []sopKind{sopClaim, sopClaim, sopClaim, sopClaim, sopComplete, sopComplete, sopComplete, sopComplete,
		sopExpire, sopExpire, sopExpire, sopClaimTxn, sopClaimTxn, sopClaimTxn, sopLockTxn, sopLockTxn, sopEnqueue, sopSnapshot}
)

func (p *program) drawOp(c chooser, label string, kinds []sopKind) sop {
	o := sop{Kind: kinds[c.choose(0, len(kinds)-1, label)]}
	switch o.Kind {
	case sopEnqueue:
		p.jobs++
	case sopComplete:
		o.Back = c.choose(0, 2, "back")
	case sopExpire:
		// Mostly the job of a recent claim (a lease worth ending); else a job by id.
		if c.choose(0, 3, "expire by id") == 3 {
			o.Job = int64(c.choose(1, p.jobs, "job"))
		} else {
			o.Back = c.choose(0, 2, "back")
		}
	case sopLockTxn:
		o.Job = int64(c.choose(1, p.jobs, "job"))
	}
	if o.Kind == sopClaimTxn || o.Kind == sopLockTxn {
		o.Commit = c.choose(0, 3, "rollback") < 3
	}
	if o.Kind == sopClaimTxn {
		o.Complete = chooseBool(c, "complete in txn")
	}
	return o
}

// next draws the next operation of a session's suffix.
func (p *program) next(c chooser, session int) sop {
	o := p.drawOp(c, opLabel(session), p.kinds)
	p.suffixes[session] = append(p.suffixes[session], o)
	return o
}

// drawProgram draws the sessions, the prefix, and the suffixes' lengths. A queue without
// lock.sql gets no lockers.
func drawProgram(c chooser, cfg ScheduledConfig, canLock bool) *program {
	p := &program{}
	for _, k := range concurrentKinds {
		if k != sopLockTxn || canLock {
			p.kinds = append(p.kinds, k)
		}
	}
	n := c.choose(2, max(2, cfg.Sessions), "sessions")
	p.jobs = c.choose(1, 5, "jobs")
	for i := 0; i < p.jobs; i++ {
		p.prefix = append(p.prefix, prefixOp{0, sop{Kind: sopEnqueue}})
	}
	// Sessions that hold a token when the concurrent part starts are what stale completions
	// are made of.
	for s := 0; s < n; s++ {
		if chooseBool(c, "prefix claim") {
			p.prefix = append(p.prefix, prefixOp{s, sop{Kind: sopClaim}})
		}
	}
	for i, k := 0, c.choose(0, cfg.MaxPrefix, labelPrefixCount); i < k; i++ {
		s := c.choose(0, n-1, labelPrefixSession)
		p.prefix = append(p.prefix, prefixOp{s, p.drawOp(c, "prefix op", sequentialKinds)})
	}
	for s := 0; s < n; s++ {
		p.lengths = append(p.lengths, c.choose(1, cfg.MaxSuffix, labelSuffix))
		p.suffixes = append(p.suffixes, nil)
	}
	return p
}
