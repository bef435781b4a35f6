package linear

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"pgqcheck/model"
	"pgqcheck/sut"
)

// Client is one session's view of the queue that records every operation it runs. When its
// connection is lost it reconnects on the next operation, as a new porcupine client: an
// operation with an unknown outcome never returns, so the same client could not issue another
// without overlapping it (etcd's robustness tests start a new stream id the same way).
type Client struct {
	Name string

	in   *sut.Installed
	rec  *Recorder // nil: run the statements without recording (the throughput baseline)
	opts sut.SessionOptions

	mu sync.Mutex // guards s against the chaos goroutine reading it
	s  *sut.Session
	id int

	lives atomic.Int32 // sessions so far; the chaos goroutine reads it to name its targets

	pid      atomic.Uint32
	inflight atomic.Value // model.OpKind of the statement in flight, "" when idle
}

// Dial connects a client named name.
func Dial(ctx context.Context, in *sut.Installed, name string, rec *Recorder, opts sut.SessionOptions) (*Client, error) {
	c := &Client{Name: name, in: in, rec: rec, opts: opts}
	c.inflight.Store(model.OpKind(""))
	if err := c.connect(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Client) connect(ctx context.Context) error {
	s, err := c.in.Connect(ctx, c.Name, c.opts)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.s = s
	c.lives.Add(1)
	if c.rec != nil {
		c.id = c.rec.NewClient()
	}
	c.mu.Unlock()
	c.pid.Store(s.PID)
	return nil
}

// PID is the backend pid of the current session (0 while disconnected).
func (c *Client) PID() uint32 { return c.pid.Load() }

// InFlight is the kind of operation the client is running now, "" when idle.
func (c *Client) InFlight() model.OpKind { return c.inflight.Load().(model.OpKind) }

// Session is the current session, for statements the harness runs itself (BEGIN, COMMIT).
func (c *Client) Session() *sut.Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.s
}

// Close ends the session.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.s != nil {
		c.s.Close()
		c.s = nil
		c.pid.Store(0)
	}
}

// label is the session's name in the history: its lifetime counts after the first.
func (c *Client) label() string {
	if n := c.lives.Load(); n > 1 {
		return fmt.Sprintf("%s/%d", c.Name, n)
	}
	return c.Name
}

// ensure reconnects a session whose connection was lost.
func (c *Client) ensure(ctx context.Context) error {
	c.mu.Lock()
	dead := c.s == nil || c.s.Conn().IsClosed()
	if dead && c.s != nil {
		c.s.Close()
		c.s = nil
		c.pid.Store(0)
	}
	c.mu.Unlock()
	if !dead {
		return nil
	}
	return c.connect(ctx)
}

func (c *Client) now() int64 {
	if c.rec == nil {
		return 0
	}
	return c.rec.Now()
}

// do runs one queue statement and records it. The outcome of a failed statement is decided by
// outcomeOf; an unknown one is recorded at +infinity and retires the client id.
func (c *Client) do(ctx context.Context, in model.Input, run func(s *sut.Session) (model.Output, error)) (model.Output, error) {
	if err := c.ensure(ctx); err != nil {
		return model.Output{Outcome: model.NotSent}, err
	}
	s := c.Session()
	c.inflight.Store(in.Kind)
	call := c.now()
	out, err := run(s)
	ret := c.now()
	c.inflight.Store(model.OpKind(""))
	if err != nil {
		out = model.Output{Outcome: outcomeOf(err), Err: errText(err)}
		if out.Outcome == model.Unknown {
			ret = Never
		}
		if v := unexpected(in.Kind, err); v != nil && c.rec != nil {
			c.rec.Finding(v)
		}
	}
	if c.rec != nil {
		c.rec.Add(Op{Client: c.id, Session: c.label(), Input: in, Output: out, Call: call, Return: ret})
		if ret == Never {
			c.id = c.rec.NewClient()
		}
	}
	return out, err
}

// Enqueue adds a job with a payload unique to it.
func (c *Client) Enqueue(ctx context.Context, payload string) (model.Output, error) {
	return c.do(ctx, model.Input{Kind: model.OpEnqueue, Payload: payload}, func(s *sut.Session) (model.Output, error) {
		id, err := s.Enqueue(ctx, payload)
		return model.Output{Job: id}, err
	})
}

// Claim asks for a job. strict marks a claim that no other session could race (see model.Input).
func (c *Client) Claim(ctx context.Context, lease time.Duration, strict bool) (model.Output, error) {
	return c.do(ctx, model.Input{Kind: model.OpClaim, Strict: strict}, func(s *sut.Session) (model.Output, error) {
		id, gen, ok, err := s.Claim(ctx, lease)
		return model.Output{Found: ok, Job: id, Gen: gen}, err
	})
}

// Complete presents a token.
func (c *Client) Complete(ctx context.Context, id, gen int64) (model.Output, error) {
	return c.do(ctx, model.Input{Kind: model.OpComplete, Job: id, Gen: gen}, func(s *sut.Session) (model.Output, error) {
		n, err := s.Complete(ctx, id, gen)
		return model.Output{Rows: n}, err
	})
}

// Expire ends a job's lease.
func (c *Client) Expire(ctx context.Context, id int64) (model.Output, error) {
	return c.do(ctx, model.Input{Kind: model.OpExpire, Job: id}, func(s *sut.Session) (model.Output, error) {
		return model.Output{}, s.Expire(ctx, id)
	})
}

// Snapshot reads every row and records one observation per job: every row it returned
// (except those omit leaves out), and an absence for each id in known (jobs whose enqueue
// returned before the snapshot was called) that it did not return.
func (c *Client) Snapshot(ctx context.Context, known []int64, omit func(model.Row) bool) ([]model.Row, error) {
	if err := c.ensure(ctx); err != nil {
		return nil, err
	}
	s := c.Session()
	c.inflight.Store(model.OpObserve)
	call := c.now()
	rows, err := s.Snapshot(ctx)
	ret := c.now()
	c.inflight.Store(model.OpKind(""))
	if err != nil {
		if v := unexpected(model.OpObserve, err); v != nil && c.rec != nil {
			c.rec.Finding(v)
		}
		return nil, err // a snapshot that did not come back observed nothing
	}
	if c.rec != nil {
		kept := rows
		if omit != nil {
			kept = nil
			for _, r := range rows {
				if !omit(r) {
					kept = append(kept, r)
				}
			}
		}
		var omitted map[int64]bool
		if len(kept) < len(rows) {
			omitted = map[int64]bool{}
			for _, r := range rows {
				omitted[r.ID] = true
			}
		}
		for _, o := range observe(kept, known, omitted) {
			c.rec.Add(Op{Client: c.id, Session: c.label(), Input: o.in, Output: o.out, Call: call, Return: ret})
		}
	}
	return rows, nil
}

type observation struct {
	in  model.Input
	out model.Output
}

func observations(rows []model.Row, known []int64) []observation {
	return observe(rows, known, nil)
}

// observe is observations, where present names rows the snapshot returned but the caller
// left out (they are not absent).
func observe(rows []model.Row, known []int64, present map[int64]bool) []observation {
	seen := map[int64]bool{}
	for id := range present {
		seen[id] = true
	}
	var out []observation
	for _, r := range rows {
		seen[r.ID] = true
		live := r.LeaseLive && r.State == model.Running
		out = append(out, observation{model.Input{Kind: model.OpObserve, Job: r.ID}, model.Output{Found: true, State: r.State, Gen: r.Generation, Live: live}})
	}
	for _, id := range known {
		if !seen[id] {
			seen[id] = true
			out = append(out, observation{model.Input{Kind: model.OpObserve, Job: id}, model.Output{}})
		}
	}
	return out
}

// outcomeOf decides what a failed statement did. Only a request that provably never reached
// the server is "not sent"; anything else may have taken effect, whatever the error says.
func outcomeOf(err error) model.Outcome {
	if pgconn.SafeToRetry(err) {
		return model.NotSent
	}
	return model.Unknown
}

// sqlState returns the Postgres error code behind err, "" when it is not a server error.
func sqlState(err error) string {
	var se *sut.StatementError
	if errors.As(err, &se) {
		return se.SQLState
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.Code
	}
	return ""
}

// errText is an error as a history keeps it: the server's message and code, or the
// client's one-line error.
func errText(err error) string {
	var se *sut.StatementError
	if errors.As(err, &se) {
		return se.Error()
	}
	return err.Error()
}

// injected reports whether an error is one the harness causes on purpose: a cancelled
// statement, a terminated backend, a lost connection.
func injected(err error) bool {
	code := sqlState(err)
	switch {
	case code == "":
		return true // not a server error: the connection went away
	case code == "57014", code == "57P01", code == "57P02", code == "57P03":
		return true
	case len(code) == 5 && code[:2] == "08":
		return true
	}
	return false
}

// unexpected turns an error the harness did not cause into the property it breaks: a queue
// statement on a correct queue never fails (property 9), and a claim never returns two rows.
func unexpected(kind model.OpKind, err error) *model.Violation {
	var multi *sut.ErrMultipleRows
	if errors.As(err, &multi) {
		return multi.Violation()
	}
	if injected(err) {
		return nil
	}
	var se *sut.StatementError
	if errors.As(err, &se) {
		return model.Violate(model.PNoErrors, "%s failed with SQLSTATE %s: %s", se.File, se.SQLState, se.Msg)
	}
	return model.Violate(model.PNoErrors, "%s failed: %s", kind, errText(err))
}
