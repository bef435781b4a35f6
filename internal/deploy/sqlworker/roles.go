package main

import (
	"context"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/deploy/protocol"
)

// execute claims one job and, if one came back, works on it and completes it. Statements run
// without the signal's context: a stop is honoured between executions, never inside one.
func execute(c *conn) {
	ctx := context.Background()
	seq, _ := c.log.Send(protocol.OpClaim, 0, 0)
	id, gen, ok, clk, err := c.sess.Claim(ctx, c.cfg.Lease())
	ans := c.answer(clk, err)
	ans.Found, ans.Job, ans.Gen = ok, id, gen
	_ = c.log.Answer(seq, protocol.OpClaim, ans)
	if err != nil || !ok {
		time.Sleep(c.cfg.Poll())
		return
	}
	_ = c.log.Start(id, gen, clk.To, clk.From)
	time.Sleep(protocol.WorkFor(c.cfg.Seed, id, gen, c.cfg.WorkMS[0], c.cfg.WorkMS[1]))
	seq, _ = c.log.Send(protocol.OpComplete, id, gen)
	n, clk, err := c.sess.Complete(ctx, id, gen)
	ans = c.answer(clk, err)
	ans.Job, ans.Gen, ans.Rows = id, gen, n
	_ = c.log.Answer(seq, protocol.OpComplete, ans)
	result := protocol.ResultRefused
	switch {
	case err != nil:
		result = protocol.ResultFailed
	case n == 1:
		result = protocol.ResultDone
	}
	_ = c.log.End(id, gen, clk.To, result)
}

// enqueue enqueues the workload, each job at its time from the start, reconnecting after a
// lost answer (the enqueue's outcome is then unknown: the history says so, and the job is
// not enqueued again).
func enqueue(ctx context.Context, c *conn) error {
	jobs, err := protocol.ReadWorkload(c.cfg.Workload)
	if err != nil {
		return err
	}
	start := time.Now()
	for _, j := range jobs {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Until(start.Add(time.Duration(j.AtMS) * time.Millisecond))):
		}
		if err := c.connect(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		payload := j.Payload()
		delay := time.Duration(j.DelayMS) * time.Millisecond
		seq, _ := c.log.SendEnqueue(payload, delay)
		id, clk, err := c.sess.EnqueueAt(context.Background(), payload, delay)
		ans := c.answer(clk, err)
		ans.Job, ans.Payload = id, payload
		_ = c.log.Answer(seq, protocol.OpEnqueue, ans)
	}
	return nil
}

// snapshot reports every job's row, and its business effects where the queue counts them.
func snapshot(ctx context.Context, c *conn) error {
	if err := c.connect(ctx); err != nil {
		return err
	}
	rows, clk, err := c.sess.Snapshot(ctx)
	if err != nil {
		return err
	}
	from, to := protocol.Micros(clk.From), protocol.Micros(clk.To)
	for _, r := range rows {
		e := protocol.Event{Ev: protocol.EvObserve, Job: r.ID, State: string(r.State), Gen: r.Generation, Live: r.LeaseLive, Attempts: r.Attempts, From: from, To: to}
		if err := c.log.Event(e); err != nil {
			return err
		}
	}
	if !c.q.Can().Effect {
		return nil
	}
	counts, clk, err := c.sess.Effects(ctx)
	if err != nil {
		return err
	}
	for _, n := range counts {
		if err := c.log.Event(protocol.Event{Ev: protocol.EvEffects, Job: n.Job, Rows: n.Count, From: protocol.Micros(clk.From), To: protocol.Micros(clk.To)}); err != nil {
			return err
		}
	}
	return nil
}
