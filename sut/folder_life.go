package sut

import (
	"context"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/textfmt"
	"github.com/pgqcheck/pgqcheck/model"
)

// The folder's lifecycle statements (lifecycle.go).

func (f *folder) fail(ctx context.Context, s *Session, id, gen int64, retryable bool, text string) (int64, Clock, error) {
	if !f.q.Can().Fail {
		return 0, Clock{}, lacks(f.q, FileFail)
	}
	return f.rowsChanged(ctx, s, FileFail, f.q.Fail, id, gen, retryable, text)
}

func (f *folder) renew(ctx context.Context, s *Session, id, gen int64, lease time.Duration) (int64, Clock, error) {
	if !f.q.Can().Renew {
		return 0, Clock{}, lacks(f.q, FileRenew+" taking a claim's token")
	}
	return f.rowsChanged(ctx, s, FileRenew, f.q.Renew, id, gen, leaseArg(f.q.Shape().Life, lease))
}

func (f *folder) heartbeat(ctx context.Context, s *Session, lease time.Duration) ([]int64, Clock, error) {
	if !f.q.Can().Heartbeat {
		return nil, Clock{}, lacks(f.q, FileRenew+" taking a worker's name")
	}
	r, clk, err := s.timed(ctx, FileRenew, f.q.Renew, s.Worker, leaseArg(f.q.Shape().Life, lease))
	if err != nil {
		return nil, clk, stmtErr(FileRenew, err)
	}
	ids := make([]int64, len(r.rows))
	for i := range r.rows {
		if ids[i], err = f.jobID(s, r, i, 0); err != nil {
			return nil, clk, stmtErr(FileRenew, err)
		}
	}
	return ids, clk, nil
}

func (f *folder) effect(ctx context.Context, s *Session, id int64) (Clock, error) {
	if !f.q.Can().Effect {
		return Clock{}, lacks(f.q, FileEffect)
	}
	arg, err := f.idArg(s, id)
	if err != nil {
		return Clock{}, stmtErr(FileEffect, err)
	}
	_, clk, err := s.timed(ctx, FileEffect, f.q.Effect, arg)
	return clk, stmtErr(FileEffect, err)
}

func (f *folder) effects(ctx context.Context, s *Session) ([]model.EffectCount, Clock, error) {
	if !f.q.Can().Effect {
		return nil, Clock{}, lacks(f.q, FileEffects)
	}
	r, clk, err := s.timed(ctx, FileEffects, f.q.Effects)
	if err != nil {
		return nil, clk, stmtErr(FileEffects, err)
	}
	out := make([]model.EffectCount, len(r.rows))
	for i := range r.rows {
		if out[i].Job, err = f.jobID(s, r, i, 0); err == nil {
			err = s.scanCol(r, i, 1, &out[i].Count)
		}
		if err != nil {
			return nil, clk, stmtErr(FileEffects, err)
		}
	}
	return out, clk, nil
}

// afterReset runs reset.sql, which rebuilds the state the queue needs and the reset emptied.
func (f *folder) afterReset(ctx context.Context, in *Installed) error {
	if f.q.Reset == "" {
		return nil
	}
	if _, err := in.admin.Exec(ctx, f.q.Reset); err != nil {
		return &ContractError{f.q.Source, FileReset, "fails after the reset: " + textfmt.ErrLine(err)}
	}
	return nil
}
