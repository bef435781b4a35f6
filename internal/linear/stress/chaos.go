package stress

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/faultproxy"
	"github.com/pgqcheck/pgqcheck/internal/generate"
	"github.com/pgqcheck/pgqcheck/internal/linear/record"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/model"
)

// chaos injects the faults of a stress run from one goroutine: it expires leases (mostly those
// of paused workers), holds row locks in open transactions (a paused worker's job, so that its
// completion waits; or a ready job, which claims must skip), cancels statements, terminates
// backends, arms proxy faults on workers' connections (armNetFault), and takes snapshots.
// Terminating a worker while its statement waits behind a held lock, and a dropped reply or a
// cut connection, are what produce operations with unknown outcomes.
//
// It alone uses the installation's admin connection while the run goes on.
type chaos struct {
	r       *run
	rng     *rand.Rand
	expirer *actor         // expires leases
	locker  *actor         // holds row locks; nil on a queue that cannot lock a row
	reader  *record.Client // takes the snapshots
	done    map[int64]bool // jobs an earlier snapshot saw done
}

// snapshot observes every job, except those an earlier snapshot already saw done: done is
// terminal, and observing thousands of done rows again and again would swamp the history.
func (ch *chaos) snapshot() {
	if ch.done == nil {
		ch.done = map[int64]bool{}
	}
	f := &record.Flight{Stmt: program.SnapshotStmt{Known: ch.r.knownIDs(), Omit: func(row model.Row) bool { return ch.done[row.ID] }}}
	res, _, err := ch.reader.Do(ch.r.ctx, f)
	if err != nil || res.Err != nil {
		return
	}
	for _, row := range res.Rows {
		ch.r.saw(row.ID)
		if row.State == model.Done {
			ch.done[row.ID] = true
		}
	}
}

func (ch *chaos) loop() {
	r := ch.r
	var watched time.Time
	for !r.stopped() {
		time.Sleep(time.Duration(300+ch.rng.IntN(1200)) * time.Microsecond)
		r.chaosTurn.RLock() // a crash round waits for the turn to end (see crashRounds)
		if ch.nearLeaseEnd() && time.Since(watched) >= leaseWatchEvery {
			// Snapshots land around the end of a lease a paused worker holds, where lease_live
			// turns false.
			watched = time.Now()
			ch.snapshot()
		}
		switch drawKind(ch.rng, generate.ChaosWeights) {
		case "expire":
			ch.expire()
		case "lock":
			if ch.locker != nil {
				ch.lock()
			} else {
				ch.expire()
			}
		case "cancel":
			if w := ch.anyWorker(); w != nil {
				ch.cancel(w)
			}
		case "terminate":
			if w := ch.anyWorker(); w != nil {
				ch.terminate(w)
			}
		case "snapshot":
			ch.snapshot()
		case "net":
			ch.armNetFault(ch.anyWorker())
		}
		r.chaosTurn.RUnlock()
	}
}

// Around a paused worker's timed lease's end (leaseWatch either side, on the database clock's
// best guess) the chaos goroutine snapshots every leaseWatchEvery.
const (
	leaseWatch      = 30 * time.Millisecond
	leaseWatchEvery = 5 * time.Millisecond
)

// nearLeaseEnd reports whether a paused worker holds a timed lease that ends about now.
func (ch *chaos) nearLeaseEnd() bool {
	now := ch.r.rec.DB.Estimate()
	for _, w := range ch.r.workers {
		t := w.paused.Load()
		if t == nil || t.Lease == ch.r.cfg.Lease || t.Until.To == model.Never {
			continue
		}
		if now >= t.Until.From-leaseWatch && now <= t.Until.To+leaseWatch {
			return true
		}
	}
	return false
}

func (ch *chaos) anyWorker() *worker {
	ws := ch.r.workers
	return ws[ch.rng.IntN(len(ws))]
}

// target picks a job held by a paused worker, or else one recently claimed. A paused worker's
// timed lease is left to run out by itself.
func (ch *chaos) target() (int64, bool) {
	ws := ch.r.workers
	start := ch.rng.IntN(len(ws))
	for i := range ws {
		if t := ws[(start+i)%len(ws)].paused.Load(); t != nil && t.Lease == ch.r.cfg.Lease && ch.rng.IntN(10) < 8 {
			return t.ID, true
		}
	}
	t, ok := ch.r.recentClaim(ch.rng)
	return t.ID, ok
}

func (ch *chaos) expire() {
	if id, ok := ch.target(); ok {
		ch.expirer.Do(ch.r.ctx, program.Expire{S: ch.expirer.client.Name, Job: id})
	}
}

func (ch *chaos) cancel(w *worker) {
	if pid := w.client.PID(); pid != 0 {
		ch.r.rec.Fault("cancel", w.client.Label())
		_ = ch.r.in.Cancel(ch.r.ctx, pid)
	}
}

func (ch *chaos) terminate(w *worker) {
	if pid := w.client.PID(); pid != 0 {
		ch.r.rec.Fault("terminate", w.client.Label())
		_ = ch.r.in.Terminate(ch.r.ctx, pid)
	}
}

// lock holds a job's row lock in an open transaction for a few milliseconds, watching who
// waits behind it. A completion or expiry may wait. A claim should skip a locked row, but a
// wait behind this injected lock is recorded as an observation (History.Waits), not judged: a
// claim can wait here when the row was updated after its snapshot and then locked (Prop and
// scheduled mode judge skip-don't-wait strictly). Now and then it cancels or terminates a
// waiting worker, then ends its transaction one of four ways.
func (ch *chaos) lock() {
	r := ch.r
	ctx := r.ctx
	var id int64
	if ch.rng.IntN(2) == 0 {
		id = r.unclaimed()
	}
	if id == 0 {
		var ok bool
		if id, ok = ch.target(); !ok {
			return
		}
	}
	l := ch.locker
	name := l.client.Name
	if rs, err := l.Do(ctx, program.Lock{S: name, Job: id}); err != nil || len(rs) == 0 || rs[len(rs)-1].Err != nil {
		if l.session.InTxn {
			l.Do(ctx, program.Rollback{S: name})
		}
		return
	}
	faulted := false
	hold := time.Duration(1+ch.rng.IntN(8)) * time.Millisecond
	for end := time.Now().Add(hold); time.Now().Before(end) && !r.stopped(); {
		time.Sleep(500 * time.Microsecond)
		for _, b := range ch.waitingBehind(ctx, l.client.PID()) {
			w := b.worker
			// Judge by the statement the server says is waiting, not by what the client has in
			// flight: a worker may have moved on to a claim since the server was asked.
			if b.query == r.in.Queue.Claim && strings.HasPrefix(b.wait, "Lock:") {
				r.rec.ClaimWaited(fmt.Sprintf("a claim waited (%s) behind the row lock on job %d", b.wait, id))
			}

			if !faulted && ch.rng.IntN(3) == 0 {
				faulted = true
				if ch.rng.IntN(2) == 0 {
					ch.cancel(w)
				} else {
					ch.terminate(w)
				}
			}
		}
	}
	ch.release(ctx, id)
}

// blocked is a worker whose backend waits behind the locker: the statement it runs and what it
// waits on.
type blocked struct {
	worker      *worker
	query, wait string
}

// waitingBehind returns the workers whose backends wait for a lock that pid holds.
func (ch *chaos) waitingBehind(ctx context.Context, pid uint32) []blocked {
	rows, err := ch.r.in.Admin().Query(ctx, `SELECT pid, query, coalesce(wait_event_type || ':' || wait_event, '') FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))`, int32(pid))
	if err != nil {
		return nil
	}
	var out []blocked
	for rows.Next() {
		var p int32
		var b blocked
		if rows.Scan(&p, &b.query, &b.wait) != nil {
			continue
		}
		for _, w := range ch.r.workers {
			if w.client.PID() == uint32(p) {
				b.worker = w
				out = append(out, b)
			}
		}
	}
	rows.Close()
	return out
}

// release ends the locker's transaction by commit, rollback, a cancelled statement, or a
// terminated backend; the client records when the lock was gone for sure.
func (ch *chaos) release(ctx context.Context, id int64) {
	r, l := ch.r, ch.locker
	name := l.client.Name
	switch drawKind(ch.rng, generate.ReleaseWeights) {
	case "commit":
		l.Do(ctx, program.Commit{S: name})
	case "rollback":
		l.Do(ctx, program.Rollback{S: name})
	case "cancel":
		r.rec.Fault("cancel", l.client.Label())
		_ = l.client.CancelIdle(ctx) // on failure the backend is ended: the lock is gone either way
		l.session.InTxn, l.session.Locks = false, nil
	case "terminate":
		r.rec.Fault("terminate", l.client.Label())
		_ = r.in.Terminate(ctx, l.client.PID())
		l.client.ConnectionLost()
		l.session.InTxn, l.session.Locks = false, nil
	}
}

// drawNetFault draws a proxy fault from generate.NetFaultWeights.
func drawNetFault(rng *rand.Rand) faultproxy.Fault {
	f := faultproxy.Fault{Kind: faultproxy.Kind(drawKind(rng, generate.NetFaultWeights))}
	if !f.Kind.Lost() {
		f.For = generate.NetFaultHolds[rng.IntN(len(generate.NetFaultHolds))]
	}
	return f
}

// armNetFault arms a proxy fault on a worker's connection: its next statement takes it.
func (ch *chaos) armNetFault(w *worker) {
	if w.client.Proxied() {
		w.client.Inject(drawNetFault(ch.rng))
	}
}
