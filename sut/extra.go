package sut

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgqcheck/pgqcheck/model"
)

// An Extra is a statement of the contract beyond its core and the lifecycle's, which a queue may
// ship: one file a folder holds, or the interface a queue written in Go implements in its place.
// Each registers itself from a file of its own (RegisterExtra), which says all the contract
// knows of it: its parameters and answer, its line of the contract, the capability it gives the
// queue (model.Can) and how a Go queue's call of it is made. A session runs one by its file
// (Session.Extra), whatever backend the queue has.
type Extra struct {
	File string
	// Params are what the contract hands the statement, in order: ParamJob, ParamToken,
	// ParamPayload, ParamDelay, ParamKey.
	Params []string
	Answer Answer
	// Line is the file's line of the contract (its parameters, then its answer), which errors
	// on a folder quote.
	Line string
	// Can marks, in a queue's capabilities, that it ships the statement.
	Can func(c *model.Can)
	// Go is the statement of a queue written in Go: nil where g does not implement it.
	Go func(g GoQueue) GoCall
}

// What an extra statement is handed, by the names the folder's errors use.
const (
	ParamJob     = "id"
	ParamToken   = "token..." // a claim's id, its generation where the queue keeps one, then its token columns
	ParamPayload = "payload (jsonb)"
	ParamDelay   = "delay (interval)"
	ParamKey     = "key (text)"
)

// Answer is what an extra statement returns.
type Answer int

const (
	// RowsChanged: one row, one column, the rows it changed (0 or 1).
	RowsChanged Answer = iota
	// MaybeID: zero or one row, the id of the job it created.
	MaybeID
)

// Args are an extra statement's arguments, each where its Params name it.
type Args struct {
	Job, Gen int64 // the job (ParamJob), or the claim presented (ParamToken)
	Payload  string
	Delay    time.Duration
	Key      string
}

// Reply is an extra statement's answer: the rows it changed (RowsChanged), or the job it
// created, if any (MaybeID).
type Reply struct {
	Rows  int64
	Job   int64
	Found bool
}

// GoCall is an extra statement of a queue written in Go, made on the session's connection.
type GoCall func(ctx context.Context, c *pgx.Conn, a Args) (Reply, error)

var extras []*Extra

// RegisterExtra makes an extra statement part of the contract; it is meant for init functions.
func RegisterExtra(x *Extra) {
	if slices.ContainsFunc(extras, func(o *Extra) bool { return o.File == x.File }) {
		panic("pgqcheck: extra statement " + x.File + " registered twice")
	}
	extras = append(extras, x)
	contractLines[x.File] = x.Line
}

// extraNamed is the extra statement of that file (nil when there is none).
func extraNamed(file string) *Extra {
	for _, x := range extras {
		if x.File == file {
			return x
		}
	}
	return nil
}

// shipsExtras records in q's capabilities the extra statements it ships: a folder's files, the
// interfaces a Go queue implements.
func (q *Queue) shipsExtras(g GoQueue) {
	for _, x := range extras {
		if q.Extras[x.File] != "" || g != nil && x.Go(g) != nil {
			x.Can(&q.Declared.Shape.Can)
		}
	}
}

// Extra runs the queue's extra statement of that file with a's arguments.
func (s *Session) Extra(ctx context.Context, file string, a Args) (Reply, Clock, error) {
	x := extraNamed(file)
	if x == nil {
		return Reply{}, Clock{}, fmt.Errorf("pgqcheck: no statement %s in the contract", file)
	}
	return s.in.be.extra(ctx, s, x, a)
}

// extra runs an extra statement of the folder: its arguments as its parameters name them, its
// answer read as the contract says.
func (f *folder) extra(ctx context.Context, s *Session, x *Extra, a Args) (Reply, Clock, error) {
	sql := f.q.Extras[x.File]
	if sql == "" {
		return Reply{}, Clock{}, lacks(f.q, x.File)
	}
	var args []any
	for _, p := range x.Params {
		switch p {
		case ParamJob:
			arg, err := f.idArg(s, a.Job)
			if err != nil {
				return Reply{}, Clock{}, stmtErr(x.File, err)
			}
			args = append(args, arg)
		case ParamToken:
			token, err := f.tokenArgs(s, a.Job, a.Gen)
			if err != nil {
				return Reply{}, Clock{}, stmtErr(x.File, err)
			}
			args = append(args, token...)
		case ParamPayload:
			args = append(args, a.Payload)
		case ParamDelay:
			args = append(args, a.Delay)
		case ParamKey:
			args = append(args, a.Key)
		}
	}
	r, clk, err := s.timed(ctx, x.File, sql, args...)
	var rep Reply
	switch {
	case err != nil:
	case x.Answer == RowsChanged:
		err = s.one(r, &rep.Rows)
	case len(r.rows) > 1:
		err = fmt.Errorf("returned %d rows, want at most one", len(r.rows))
	case len(r.rows) == 1:
		rep.Found = true
		rep.Job, err = f.jobID(s, r, 0, 0)
	}
	return rep, clk, stmtErr(x.File, err)
}

// extraShape is an extra statement's parameters and columns, for the folder's checks.
func (f *folder) extraShape(x *Extra, token []string) shape {
	var params []string
	for _, p := range x.Params {
		if p == ParamToken {
			params = append(params, token...)
			continue
		}
		params = append(params, p)
	}
	s := shape{file: x.File, sql: f.q.Extras[x.File], params: params, cols: []colKind{intCol}, names: "rows changed"}
	if x.Answer == MaybeID {
		s.cols, s.names = []colKind{idCol}, "id"
	}
	return s
}

// extra runs an extra statement of a queue written in Go, between two readings of the clock.
func (b *goBackend) extra(ctx context.Context, s *Session, x *Extra, a Args) (Reply, Clock, error) {
	call := x.Go(b.g)
	if call == nil {
		return Reply{}, Clock{}, lacks(b.q, x.File)
	}
	var rep Reply
	clk, err := b.call(ctx, s, func(c *pgx.Conn) (err error) { rep, err = call(ctx, c, a); return err })
	return rep, clk, stmtErr(x.File, err)
}
