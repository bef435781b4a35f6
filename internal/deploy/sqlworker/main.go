// Command sqlworker is the deployment mode's program for a queue folder of SQL, in each of the
// worker protocol's roles (internal/deploy/protocol, docs/deploy.md): it installs the queue,
// enqueues the run's workload, runs as a worker, or reads every job's row. As a worker it is a
// process of its own that claims a job with claim.sql, works on it for as long as the run's
// seed draws, and completes it with complete.sql, reporting every statement and every
// execution. A completion that changes nothing is never retried: the worker moves on, as the
// seed's article says a worker must.
//
// A worker runs until SIGTERM or SIGINT, which it honours between executions; the harness
// stops, stalls and kills it from outside.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/deploy/protocol"
	"github.com/pgqcheck/pgqcheck/sut"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

func run() error {
	cfg, err := protocol.FromEnv()
	if err != nil {
		return err
	}
	q, err := loadQueue(cfg.Queue)
	if err != nil {
		return err
	}
	if why := q.OwnIdentity(); why != "" {
		return fmt.Errorf("pgqcheck worker: %s; the SQL worker runs queues whose ids and generations are their own columns", why)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if cfg.Role == protocol.RoleSetup {
		in, err := sut.Install(ctx, cfg.DSN, q)
		if err != nil {
			return err
		}
		in.Close()
		return nil
	}
	log, err := protocol.Open(cfg, "queue "+q.Source)
	if err != nil {
		return err
	}
	defer log.Close()
	c := &conn{cfg: cfg, q: q, log: log}
	defer c.close()
	switch cfg.Role {
	case protocol.RoleEnqueue:
		return enqueue(ctx, c)
	case protocol.RoleSnapshot:
		return snapshot(ctx, c)
	}
	for ctx.Err() == nil {
		if err := c.connect(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		execute(c)
	}
	return nil
}

// loadQueue is the queue folder at path, or the built-in queue of that name.
func loadQueue(path string) (*sut.Queue, error) {
	if path == "" {
		return nil, errors.New("pgqcheck worker: the configuration names no queue; the SQL worker needs a queue folder")
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return sut.LoadDir(path)
	}
	return sut.Builtin(path)
}

// conn is the process's session with the queue's database, opened again when lost.
type conn struct {
	cfg  protocol.Config
	q    *sut.Queue
	log  *protocol.Log
	in   *sut.Installed
	sess *sut.Session
}

// connectFor bounds how long a process keeps trying to reach its database: a cut connection
// or a restarting server comes back within it; a run that lasts longer has failed.
const connectFor = 2 * time.Minute

// connect opens the session if there is none, retrying while the database is out of reach (a
// cut, a server restarting).
func (c *conn) connect(ctx context.Context) error {
	if c.sess != nil {
		return nil
	}
	deadline := time.Now().Add(connectFor)
	var last error
	for time.Now().Before(deadline) {
		if c.in == nil {
			c.in, last = sut.Attach(ctx, c.cfg.DSN, c.q)
		}
		if c.in != nil {
			if c.sess, last = c.in.Connect(ctx, c.cfg.Worker, sut.SessionOptions{}); last == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("pgqcheck worker %s: no connection to the queue's database for %v: %v", c.cfg.Worker, connectFor, last)
}

func (c *conn) close() {
	if c.sess != nil {
		c.sess.Close()
	}
	if c.in != nil {
		c.in.Close()
	}
}

// answer is what a statement's readings and error say: a server's error is the statement's
// answer (in autocommit it took no effect); any other error lost the answer, so the outcome
// is unknown and the session is over.
func (c *conn) answer(clk sut.Clock, err error) protocol.Event {
	e := protocol.Event{From: protocol.Micros(clk.From), To: protocol.Micros(clk.To)}
	if err == nil {
		return e
	}
	e.Err = err.Error()
	var se *sut.StatementError
	var multi *sut.ErrMultipleRows
	switch {
	case errors.As(err, &multi):
		e.Rows = int64(len(multi.Rows))
	case errors.As(err, &se) && se.SQLState != "" && !c.sess.Conn().IsClosed():
	default:
		e.Lost = true
		c.sess.Close()
		c.sess = nil
	}
	return e
}
