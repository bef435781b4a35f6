package sut

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Clock is the span of database time in which a statement ran: clock_timestamp() read just
// before it and just after it, in the same round trip. Each reading is a transaction of its
// own outside an explicit one (a Sync after each), so in autocommit the statement's now(),
// its clock_timestamp() and its commit all lie within [From, To]. A slow machine widens the
// span; nothing about it is guessed.
type Clock struct{ From, To time.Time }

// Known reports whether both readings came back.
func (c Clock) Known() bool { return !c.From.IsZero() && !c.To.IsZero() }

const clockSQL = "SELECT clock_timestamp()"

// result is one statement's rows, raw, with the types to decode them by.
type result struct {
	fields []pgconn.FieldDescription
	rows   [][][]byte
	tag    pgconn.CommandTag
}

// timed runs one of the queue's statements between two clock readings in a single pipeline.
// The statement is prepared once per session under its file's name, so that its parameters
// are encoded by the types the server inferred, as pgx's own query path does.
func (s *Session) timed(ctx context.Context, file, sql string, args ...any) (result, Clock, error) {
	sd, err := s.prepared(ctx, file, sql)
	if err != nil {
		return result{}, Clock{}, err
	}
	var eqb pgx.ExtendedQueryBuilder
	if err := eqb.Build(s.conn.TypeMap(), sd, args); err != nil {
		return result{}, Clock{}, err
	}
	clock, err := s.prepared(ctx, "clock", clockSQL)
	if err != nil {
		return result{}, Clock{}, err
	}
	binary := []int16{pgx.BinaryFormatCode}
	p := s.conn.PgConn().StartPipeline(ctx)
	p.SendQueryStatement(clock, nil, nil, binary)
	p.SendPipelineSync()
	p.SendQueryStatement(sd, eqb.ParamValues, eqb.ParamFormats, eqb.ResultFormats)
	p.SendPipelineSync()
	p.SendQueryStatement(clock, nil, nil, binary)
	p.SendPipelineSync()
	if err := p.Flush(); err != nil {
		p.Close()
		return result{}, Clock{}, err
	}
	// From here the statement was sent: an answer that does not come back leaves its outcome
	// unknown, whatever the connection says, until its own sync has been read (in autocommit,
	// the statement has then committed); a lost last reading costs only the window's end.
	var clk Clock
	r, err := readOne(p)
	if err != nil && !isServerError(err) {
		p.Close()
		return result{}, clk, &LostReply{err}
	}
	if err == nil {
		clk.From, _ = s.clockOf(r)
	}
	res, stmtErr := readOne(p)
	if stmtErr != nil && !isServerError(stmtErr) {
		p.Close()
		return result{}, clk, &LostReply{stmtErr}
	}
	if r, err := readOne(p); err == nil {
		clk.To, _ = s.clockOf(r)
	}
	_ = p.Close()
	return res, clk, stmtErr
}

// LostReply is a statement that was sent and whose answer did not come back: it may have
// taken effect. It is never safe to retry, whatever the connection's own error says (a
// connection closed under a pipeline reports itself as safe, since its next request is).
type LostReply struct{ Err error }

func (e *LostReply) Error() string     { return e.Err.Error() }
func (e *LostReply) Unwrap() error     { return e.Err }
func (e *LostReply) SafeToRetry() bool { return false }

// readOne reads one query's rows and the sync after it. A server error is the query's
// answer (the pipeline goes on after the sync); any other error ends the pipeline.
func readOne(p *pgconn.Pipeline) (result, error) {
	var res result
	got, err := p.GetResults()
	if err == nil {
		rr, ok := got.(*pgconn.ResultReader)
		if !ok {
			return result{}, fmt.Errorf("pipeline: expected a result, got %T", got)
		}
		r := rr.Read()
		res, err = result{fields: r.FieldDescriptions, rows: r.Rows, tag: r.CommandTag}, r.Err
	}
	if err != nil && !isServerError(err) {
		return result{}, err
	}
	if serr := expectSync(p); serr != nil {
		return result{}, serr
	}
	return res, err
}

func expectSync(p *pgconn.Pipeline) error {
	got, err := p.GetResults()
	if err != nil {
		return err
	}
	if _, ok := got.(*pgconn.PipelineSync); !ok {
		return fmt.Errorf("pipeline: expected a sync, got %T", got)
	}
	return nil
}

func isServerError(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg)
}

func (s *Session) clockOf(r result) (time.Time, error) {
	if len(r.rows) != 1 || len(r.rows[0]) != 1 {
		return time.Time{}, fmt.Errorf("clock_timestamp() returned %d rows", len(r.rows))
	}
	var t time.Time
	err := s.conn.TypeMap().Scan(r.fields[0].DataTypeOID, r.fields[0].Format, r.rows[0][0], &t)
	return t, err
}

// prepared returns the session's prepared statement for a file, preparing it on first use.
func (s *Session) prepared(ctx context.Context, file, sql string) (*pgconn.StatementDescription, error) {
	if sd, ok := s.stmts[file]; ok {
		return sd, nil
	}
	sd, err := s.conn.Prepare(ctx, "pgqcheck_"+file, sql)
	if err != nil {
		return nil, err
	}
	if s.stmts == nil {
		s.stmts = map[string]*pgconn.StatementDescription{}
	}
	s.stmts[file] = sd
	return sd, nil
}

// scanCol decodes one column of one row into dst.
func (s *Session) scanCol(r result, row, col int, dst any) error {
	if col >= len(r.fields) {
		return fmt.Errorf("returned %d columns, want at least %d", len(r.fields), col+1)
	}
	if err := s.conn.TypeMap().Scan(r.fields[col].DataTypeOID, r.fields[col].Format, r.rows[row][col], dst); err != nil {
		return fmt.Errorf("column %d (%s): %w", col+1, r.fields[col].Name, err)
	}
	return nil
}

// scan decodes one row's columns into dst, by the types the server sent.
func (s *Session) scan(r result, row int, dst ...any) error {
	if len(r.fields) < len(dst) {
		return fmt.Errorf("returned %d columns, want %d", len(r.fields), len(dst))
	}
	for i, d := range dst {
		if err := s.scanCol(r, row, i, d); err != nil {
			return err
		}
	}
	return nil
}

// one decodes a statement that returns exactly one row.
func (s *Session) one(r result, dst ...any) error {
	if len(r.rows) != 1 {
		return fmt.Errorf("returned %d rows, want exactly one", len(r.rows))
	}
	return s.scan(r, 0, dst...)
}
