package sut

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgqcheck/pgqcheck/model"
)

// GoQueue is a queue written in Go rather than as a folder of SQL: its operations run as Go
// code on the session's own connection, so a queue whose logic lives in Go, or whose claim holds
// a transaction open while the job runs, is judged like a folder. The suite reads the database
// clock just before and just after each call, so every answer is judged at the window of
// database time the call ran in, as a folder's statements are.
//
// Each method gets the connection of the session that runs it; a session is one worker, the
// reader, or the harness's expirer. Job ids are the queue's own integers (ascending with
// enqueue order for the lowest-id claim order).
type GoQueue interface {
	// Schema is the DDL run once in a fresh database.
	Schema() string
	Enqueue(ctx context.Context, c *pgx.Conn, payload string) (id int64, err error)
	// Claim takes a job with the given lease (ignored where the queue fixes its own) for the named
	// worker. gen is the job's generation; a queue declared without one returns 0.
	Claim(ctx context.Context, c *pgx.Conn, lease time.Duration, worker string) (id, gen int64, ok bool, err error)
	// Complete presents a claim's token and returns the rows completed (0 or 1).
	Complete(ctx context.Context, c *pgx.Conn, id, gen int64) (rows int64, err error)
	// Expire is the test hook that ends a job's lease now.
	Expire(ctx context.Context, c *pgx.Conn, id int64) error
	// Snapshot lists every job (every live job where done rows are deleted), ordered by id.
	Snapshot(ctx context.Context, c *pgx.Conn) ([]model.Row, error)
}

// GoLocker is a GoQueue that can row-lock a job in the session's open transaction, as lock.sql
// does; without it the locker operations are left out.
type GoLocker interface {
	Lock(ctx context.Context, c *pgx.Conn, id int64) error
}

// GoResetter is a GoQueue that keeps state of its own beside the database; Reset forgets it
// when the suite empties the queue between runs.
type GoResetter interface{ Reset() }

// The lifecycle, for a Go queue (see lifecycle.go): each interface a GoQueue implements is the
// file a folder would ship. A GoFailer reports a failure of the claim it presents (fail.sql),
// a GoRenewer renews its lease (renew.sql, per claim: a worker's heartbeat is a folder's form
// only), a GoScheduler enqueues a job due later (enqueue.sql's run-at delay), and a GoEffector
// writes a job's business effect on the session's connection, where the suite has opened the
// completion's transaction, and counts the effects in its business table (effect.sql,
// effects.sql). The queue's Declared.Shape.Life says how its attempts and backoffs work; its
// Snapshot then reports each job's attempts and kept error text.
type (
	GoFailer interface {
		Fail(ctx context.Context, c *pgx.Conn, id, gen int64, retryable bool, text string) (rows int64, err error)
	}
	GoRenewer interface {
		Renew(ctx context.Context, c *pgx.Conn, id, gen int64, lease time.Duration) (rows int64, err error)
	}
	GoScheduler interface {
		EnqueueAt(ctx context.Context, c *pgx.Conn, payload string, delay time.Duration) (id int64, err error)
	}
	GoEffector interface {
		Effect(ctx context.Context, c *pgx.Conn, id int64) error
		Effects(ctx context.Context, c *pgx.Conn) ([]model.EffectCount, error)
	}
	// GoRebuilder is a GoQueue with state in its database that the reset empties (a settings
	// row): Rebuild puts it back after every reset, on the harness's connection (reset.sql).
	GoRebuilder interface {
		Rebuild(ctx context.Context, c *pgx.Conn) error
	}
	// GoMigrator is a GoQueue that builds its schema with its own migrator rather than a
	// script: Migrate runs in place of Schema, on the harness's connection to the fresh
	// database, and Schema then only names it in messages.
	GoMigrator interface {
		Migrate(ctx context.Context, c *pgx.Conn) error
	}
	// GoRescuer is a GoQueue with a maintenance step (rescue.sql): Rescue makes ready the
	// running jobs whose lease is over and returns their ids. The suite runs it as an actor of
	// its own, beside the workers, as a queue's leader process runs its maintenance services.
	GoRescuer interface {
		Rescue(ctx context.Context, c *pgx.Conn) (ids []int64, err error)
	}
)

// GoDef registers a Go queue under a name.
type GoDef struct {
	Name string
	// Declared is what the queue declares, as queue.json does for a folder; whether it can lock a
	// job or rescue expired ones is read from its GoQueue (GoLocker, GoRescuer). TxBound is the
	// form only a Go queue takes.
	Declared Declared
	// New makes the queue's state for one installed database (a transaction-bound queue keeps
	// which backend holds which job).
	New func() GoQueue
	// Broken marks a mutant: registered so that its mutant.json can name it, never judged as a
	// correct queue.
	Broken bool
}

var (
	goMu   sync.Mutex
	goDefs = map[string]GoDef{}
)

// Register makes a Go queue known by name to go test (PGQCHECK_QUEUE=name) and to pgqcheck
// (--queue name). It is meant for init functions; a second registration of a name panics.
func Register(d GoDef) {
	goMu.Lock()
	defer goMu.Unlock()
	if _, dup := goDefs[d.Name]; dup {
		panic("pgqcheck: Go queue " + d.Name + " registered twice")
	}
	goDefs[d.Name] = d
}

// Definition returns the GoDef registered under name.
func Definition(name string) (GoDef, bool) {
	goMu.Lock()
	defer goMu.Unlock()
	d, ok := goDefs[name]
	return d, ok
}

// Registered returns the Go queue registered under name.
func Registered(name string) (*Queue, bool) {
	goMu.Lock()
	d, ok := goDefs[name]
	goMu.Unlock()
	if !ok {
		return nil, false
	}
	return d.queue(), true
}

// Queue is the Go queue d defines, as the suite judges it: its declaration completed from what
// its GoQueue implements (GoLocker, GoRescuer, GoFailer and the rest).
func (d GoDef) Queue() *Queue { return d.queue() }

func (d GoDef) queue() *Queue {
	q := &Queue{Name: d.Name, Source: goSource + d.Name, Declared: d.Declared,
		open: func(q *Queue) backend { return &goBackend{q: q, g: d.New()} }}
	if q.Order == "" {
		q.Order = model.LowestID
	}
	g := d.New()
	can := &q.Declared.Shape.Can
	_, can.Lock = g.(GoLocker)
	_, can.Rescue = g.(GoRescuer)
	_, can.Fail = g.(GoFailer)
	_, can.Renew = g.(GoRenewer)
	_, can.Delay = g.(GoScheduler)
	_, can.Effect = g.(GoEffector)
	q.shipsExtras(g)
	return q
}

// GoQueues lists the correct Go queues registered, by name (mutants left out).
func GoQueues() []*Queue {
	goMu.Lock()
	var names []string
	for n, d := range goDefs {
		if !d.Broken {
			names = append(names, n)
		}
	}
	goMu.Unlock()
	sort.Strings(names)
	var out []*Queue
	for _, n := range names {
		q, _ := Registered(n)
		out = append(out, q)
	}
	return out
}

// goSource prefixes a Go queue's Source: "registered txbound".
const goSource = "registered "

// EnvQueue names the variable that judges a registered Go queue (or a built-in) by name.
const EnvQueue = "PGQCHECK_QUEUE"

// Named returns a built-in queue or a registered Go queue by name.
func Named(name string) (*Queue, error) {
	if q, ok := Registered(name); ok {
		return q, nil
	}
	q, err := Builtin(name)
	if err != nil && len(Names()) > len(Builtins()) {
		return nil, fmt.Errorf("pgqcheck: no queue %q; choose one of %s", name, strings.Join(Names(), ", "))
	}
	return q, err
}

// Names lists the queues known by name: the built-ins, then the Go queues this binary registers.
func Names() []string {
	names := Builtins()
	for _, g := range GoQueues() {
		names = append(names, g.Name)
	}
	return names
}

// goBackend is the backend of a queue written in Go: its GoQueue's state in one installed
// database. Each call runs as Go code on the session's connection between two clock readings
// (call); the job ids it returns are its own integers, and where it keeps no generation the
// suite numbers its claims.
type goBackend struct {
	q *Queue
	g GoQueue
}

func (b *goBackend) schema() string { return b.g.Schema() }

func (b *goBackend) install(ctx context.Context, c *pgx.Conn) error {
	if m, ok := b.g.(GoMigrator); ok {
		return m.Migrate(ctx, c)
	}
	return execSchema(ctx, c, b.schema())
}

func (b *goBackend) ready(context.Context, *Installed) error {
	return nil // its operations are Go code, not statements to prepare
}

func (b *goBackend) reset() {
	if r, ok := b.g.(GoResetter); ok {
		r.Reset()
	}
}

func (b *goBackend) enqueue(ctx context.Context, s *Session, payload string, delay time.Duration) (int64, Clock, error) {
	var id int64
	clk, err := b.call(ctx, s, func(c *pgx.Conn) (err error) {
		if g, ok := b.g.(GoScheduler); ok {
			id, err = g.EnqueueAt(ctx, c, payload, delay)
		} else {
			id, err = b.g.Enqueue(ctx, c, payload)
		}
		return err
	})
	return id, clk, stmtErr(FileEnqueue, err)
}

func (b *goBackend) claim(ctx context.Context, s *Session, lease time.Duration) (id, gen int64, ok bool, clk Clock, err error) {
	if b.q.FixedLease != 0 {
		lease = b.q.FixedLease
	}
	clk, err = b.call(ctx, s, func(c *pgx.Conn) (err error) { id, gen, ok, err = b.g.Claim(ctx, c, lease, s.Worker); return err })
	if ok && err == nil && b.q.Shape().NoGeneration {
		gen = s.in.ids.claimed(id)
	}
	return id, gen, ok, clk, stmtErr(FileClaim, err)
}

func (b *goBackend) complete(ctx context.Context, s *Session, id, gen int64) (int64, Clock, error) {
	var n int64
	clk, err := b.call(ctx, s, func(c *pgx.Conn) (err error) { n, err = b.g.Complete(ctx, c, id, gen); return err })
	return n, clk, stmtErr(FileComplete, err)
}

func (b *goBackend) expire(ctx context.Context, s *Session, id int64) (Clock, error) {
	clk, err := b.call(ctx, s, func(c *pgx.Conn) error { return b.g.Expire(ctx, c, id) })
	return clk, stmtErr(FileExpire, err)
}

func (b *goBackend) rescue(ctx context.Context, s *Session) ([]int64, Clock, error) {
	g, ok := b.g.(GoRescuer)
	if !ok {
		return nil, Clock{}, lacks(b.q, FileRescue)
	}
	var ids []int64
	clk, err := b.call(ctx, s, func(c *pgx.Conn) (err error) { ids, err = g.Rescue(ctx, c); return err })
	return ids, clk, stmtErr(FileRescue, err)
}

func (b *goBackend) snapshot(ctx context.Context, s *Session) ([]model.Row, Clock, error) {
	var rows []model.Row
	clk, err := b.call(ctx, s, func(c *pgx.Conn) (err error) { rows, err = b.g.Snapshot(ctx, c); return err })
	if err == nil && b.q.Shape().NoGeneration {
		for i := range rows {
			rows[i].Generation = s.in.ids.generation(rows[i].ID)
		}
	}
	return rows, clk, stmtErr(FileSnapshot, err)
}

func (b *goBackend) lock(ctx context.Context, s *Session, id int64) error {
	l, ok := b.g.(GoLocker)
	if !ok {
		return lacks(b.q, FileLock)
	}
	return stmtErr(FileLock, l.Lock(ctx, s.conn, id))
}

// call runs one call of the Go queue on the session between two readings of the database
// clock. A failure that is not the server's answer leaves the call's outcome unknown: the Go
// code may have sent a statement that took effect.
func (b *goBackend) call(ctx context.Context, s *Session, call func(c *pgx.Conn) error) (Clock, error) {
	var clk Clock
	if err := s.conn.QueryRow(ctx, clockSQL).Scan(&clk.From); err != nil {
		if !isServerError(err) || s.conn.PgConn().TxStatus() != 'E' {
			return clk, err // nothing of the call was sent
		}
		// The reading failed inside the queue's own transaction (a cancel meant for the queue's
		// statement hit it, or the transaction had failed already): what a failed transaction
		// becomes is the queue's to decide, as it would be in a worker, so the call still goes
		// out, its window opening where the last reading left it.
		clk.From = time.Time{}
	}
	if err := call(s.conn); err != nil {
		if !isServerError(err) {
			return clk, &LostReply{err}
		}
		_ = s.conn.QueryRow(ctx, clockSQL).Scan(&clk.To)
		return clk, err
	}
	if err := s.conn.QueryRow(ctx, clockSQL).Scan(&clk.To); err != nil {
		return Clock{From: clk.From}, nil // the answer came back; only the window's end is lost
	}
	return clk, nil
}

func (b *goBackend) fail(ctx context.Context, s *Session, id, gen int64, retryable bool, text string) (int64, Clock, error) {
	g, ok := b.g.(GoFailer)
	if !ok {
		return 0, Clock{}, lacks(b.q, FileFail)
	}
	var n int64
	clk, err := b.call(ctx, s, func(c *pgx.Conn) (err error) { n, err = g.Fail(ctx, c, id, gen, retryable, text); return err })
	return n, clk, stmtErr(FileFail, err)
}

func (b *goBackend) renew(ctx context.Context, s *Session, id, gen int64, lease time.Duration) (int64, Clock, error) {
	g, ok := b.g.(GoRenewer)
	if !ok {
		return 0, Clock{}, lacks(b.q, FileRenew)
	}
	var n int64
	clk, err := b.call(ctx, s, func(c *pgx.Conn) (err error) { n, err = g.Renew(ctx, c, id, gen, lease); return err })
	return n, clk, stmtErr(FileRenew, err)
}

func (b *goBackend) heartbeat(context.Context, *Session, time.Duration) ([]int64, Clock, error) {
	return nil, Clock{}, lacks(b.q, FileRenew+" taking a worker's name")
}

func (b *goBackend) effect(ctx context.Context, s *Session, id int64) (Clock, error) {
	g, ok := b.g.(GoEffector)
	if !ok {
		return Clock{}, lacks(b.q, FileEffect)
	}
	clk, err := b.call(ctx, s, func(c *pgx.Conn) error { return g.Effect(ctx, c, id) })
	return clk, stmtErr(FileEffect, err)
}

func (b *goBackend) effects(ctx context.Context, s *Session) ([]model.EffectCount, Clock, error) {
	g, ok := b.g.(GoEffector)
	if !ok {
		return nil, Clock{}, lacks(b.q, FileEffects)
	}
	var out []model.EffectCount
	clk, err := b.call(ctx, s, func(c *pgx.Conn) (err error) { out, err = g.Effects(ctx, c); return err })
	return out, clk, stmtErr(FileEffects, err)
}

func (b *goBackend) afterReset(ctx context.Context, in *Installed) error {
	if g, ok := b.g.(GoRebuilder); ok {
		return stmtErr(FileReset, g.Rebuild(ctx, in.admin))
	}
	return nil
}

// ReadStable takes a Go queue's snapshot read again while read says that the rows it read and
// the claim numbers the queue keeps beside them moved apart (a claim counted while it ran), ten
// reads at the most.
func ReadStable(read func() (rows []model.Row, stable bool, err error)) ([]model.Row, error) {
	for try := 1; ; try++ {
		rows, stable, err := read()
		if err != nil || stable || try == 10 {
			return rows, err
		}
	}
}
