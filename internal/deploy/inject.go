package deploy

import (
	"context"
	"fmt"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/deploy/protocol"
)

// inject plays the schedule from start: each fault at its time, its end (a stalled worker
// resumed, a killed one replaced, a cut healed, the server back) in a goroutine of its own,
// which r.faults counts. It returns once every fault is injected, or ctx ends.
func (r *run) inject(ctx context.Context, start time.Time) {
	for _, f := range r.res.Schedule {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(start.Add(f.At))):
		}
		r.faults.Add(1)
		go func() {
			defer r.faults.Done()
			if err := r.one(ctx, f); err != nil {
				r.mu.Lock()
				if r.failed == nil {
					r.failed = err
				}
				r.mu.Unlock()
			}
		}()
	}
}

// wait sleeps d, or until ctx ends.
func wait(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// one injects fault f and ends it.
func (r *run) one(ctx context.Context, f Fault) error {
	if f.Kind == Restart {
		// One crash at a time: a restart drawn while the server is still coming back waits
		// for it (the history records when each happened).
		r.server.Lock()
		defer r.server.Unlock()
		at := r.dbNow()
		if err := r.cfg.Crash.Crash(ctx); err != nil {
			return fmt.Errorf("pgqcheck: fault %s: %v", f, err)
		}
		err := r.cfg.Crash.Restart(context.WithoutCancel(ctx))
		r.record(Restart, "", at, r.dbNow())
		if err != nil {
			return fmt.Errorf("pgqcheck: fault %s: %v", f, err)
		}
		return nil
	}
	s := r.slots[f.Worker-1]
	r.mu.Lock()
	l := s.cur
	r.mu.Unlock()
	at := r.dbNow()
	switch f.Kind {
	case Stall:
		if l.proc.stall() != nil {
			return nil // it has exited: nothing to stall
		}
		r.stalled(ctx, l, f)
		_ = l.proc.resume()
	case Kill:
		l.proc.kill()
		wait(ctx, f.For)
		if ctx.Err() != nil {
			return nil
		}
		if err := r.startWorker(s); err != nil {
			return err
		}
	case Cut:
		s.proxy.Partition(f.For)
		wait(ctx, f.For)
	}
	until := r.dbNow()
	if f.Kind == Kill {
		until = 0
	}
	r.record(f.Kind, l.label, at, until)
	return nil
}

// stalled waits out a stall: For, or, for an aimed one, until another worker began an execution
// of a job the stalled one holds, and Retaken more.
func (r *run) stalled(ctx context.Context, l *life, f Fault) {
	if f.Retaken == 0 {
		wait(ctx, f.For)
		return
	}
	end := time.Now().Add(f.For)
	held := r.held(l)
	for time.Now().Before(end) && ctx.Err() == nil {
		if len(held) > 0 && r.retaken(l, held) {
			wait(ctx, f.Retaken)
			return
		}
		wait(ctx, 50*time.Millisecond)
	}
}

// held are the jobs a life has begun and not ended, with when it began each (as its events
// say).
func (r *run) held(l *life) map[int64]int64 {
	evs, _ := protocol.Read(l.events)
	held := map[int64]int64{}
	for _, e := range evs {
		switch e.Ev {
		case protocol.EvStart:
			held[e.Job] = e.At
		case protocol.EvEnd:
			delete(held, e.Job)
		}
	}
	return held
}

// retaken reports whether another life began an execution of a job l holds, after l did.
func (r *run) retaken(l *life, held map[int64]int64) bool {
	r.mu.Lock()
	lives := append([]*life(nil), r.lives...)
	r.mu.Unlock()
	for _, o := range lives {
		if o == l || o.role != protocol.RoleWork {
			continue
		}
		evs, _ := protocol.Read(o.events)
		for _, e := range evs {
			if at, ok := held[e.Job]; ok && e.Ev == protocol.EvStart && e.At > at {
				return true
			}
		}
	}
	return false
}
