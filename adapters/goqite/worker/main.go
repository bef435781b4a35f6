// Command worker is goqite's program for the deployment mode (internal/deploy, the worker
// protocol of docs/deploy.md): maragu.dev/goqite v0.4.0 on PostgreSQL, its own job Runner as
// its users run it. A message is received by moving its timeout ahead (its visibility
// timeout, which the Runner extends while the job runs) and deleted by id once the job's
// function returns nil. The function is handed the message's body alone (no id, no receive
// count): the workload's key in it names the job, and each worker numbers its own executions
// of a job. The business effect goes to the run's HTTP destination, since the Runner's delete
// is a transaction of its own. The setup is goqite's schema_postgres.sql, read from its module.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql's pgx driver, which goqite's PostgreSQL flavour uses
	"maragu.dev/goqite"
	"maragu.dev/goqite/jobs"

	"github.com/pgqcheck/pgqcheck/internal/deploy/protocol"
	"github.com/pgqcheck/pgqcheck/internal/effectdest"
)

// Version is the goqite release this module pins.
const Version = "v0.4.0"

const (
	queueName = "pgqcheck"
	jobName   = "pgqcheck"
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
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	db, err := sql.Open("pgx", cfg.DSN)
	if err != nil {
		return fmt.Errorf("pgqcheck goqite worker: %v", err)
	}
	defer db.Close()
	if cfg.Role == protocol.RoleSetup {
		return setup(ctx, db)
	}
	log, err := protocol.Open(cfg, "goqite "+Version)
	if err != nil {
		return err
	}
	defer log.Close()
	timeout := time.Duration(max(cfg.Settings["timeout_ms"], 1)) * time.Millisecond
	q := goqite.New(goqite.NewOpts{DB: db, Name: queueName, SQLFlavor: goqite.SQLFlavorPostgreSQL, Timeout: timeout,
		MaxReceive: int(max(cfg.Settings["max_receive"], 1))})
	p := &program{cfg: cfg, db: db, log: log, q: q, runs: map[string]int64{}}
	switch cfg.Role {
	case protocol.RoleEnqueue:
		return p.enqueue(ctx)
	case protocol.RoleSnapshot:
		return p.snapshot(ctx)
	}
	r := jobs.NewRunner(jobs.NewRunnerOpts{Queue: q, Limit: int(max(cfg.Settings["limit"], 1)), PollInterval: cfg.Poll(),
		Extend: time.Duration(max(cfg.Settings["extend_ms"], 1)) * time.Millisecond})
	r.Register(jobName, p.handle)
	r.Start(ctx)
	return nil
}

// setup runs goqite's own schema, from the module this program was built with.
func setup(ctx context.Context, db *sql.DB) error {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "maragu.dev/goqite").Output()
	if err != nil {
		return fmt.Errorf("pgqcheck goqite worker: locating goqite's module: %v", err)
	}
	schema, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "schema_postgres.sql"))
	if err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, string(schema)); err != nil {
		return fmt.Errorf("pgqcheck goqite worker: goqite's schema: %v", err)
	}
	return nil
}

type program struct {
	cfg protocol.Config
	db  *sql.DB
	log *protocol.Log
	q   *goqite.Queue
	mu  sync.Mutex
	// runs counts this worker's executions of each job, by key: its executions' numbers.
	runs map[string]int64
}

// clock reads the database's clock (a report, not the job's work); the zero time when the
// database is out of reach.
func (p *program) clock() time.Time {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var t time.Time
	if err := p.db.QueryRowContext(ctx, "SELECT clock_timestamp()").Scan(&t); err != nil {
		return time.Time{}
	}
	p.log.Saw(t)
	return t
}

// body is a job's message, as goqite's Runner wraps it (jobs.Create gob-encodes the name and
// the message); the message is the workload's payload.
type payload struct {
	Key string `json:"key"`
}

func (p *program) enqueue(ctx context.Context) error {
	work, err := protocol.ReadWorkload(p.cfg.Workload)
	if err != nil {
		return err
	}
	start := time.Now()
	for _, j := range work {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Until(start.Add(time.Duration(j.AtMS) * time.Millisecond))):
		}
		delay := time.Duration(j.DelayMS) * time.Millisecond
		from := p.clock()
		seq, _ := p.log.SendEnqueue(j.Payload(), delay)
		body, _ := json.Marshal(payload{j.Key})
		id, err := jobs.Create(context.Background(), p.q, jobName, goqite.Message{Body: body, Delay: delay})
		ans := protocol.Event{From: protocol.Micros(from), Payload: j.Payload(), Key: j.Key}
		if err != nil {
			ans.Err, ans.Lost = err.Error(), true
		} else {
			ans.ID, ans.To = string(id), protocol.Micros(p.clock())
		}
		_ = p.log.Answer(seq, protocol.OpEnqueue, ans)
	}
	return nil
}

// handle is the user's job function: work, then the effect at the run's destination. The
// Runner deletes the message after it returns nil, in a statement the function cannot see: the
// completion is reported sent and never answered (its outcome is unknown).
func (p *program) handle(ctx context.Context, m []byte) error {
	var pl payload
	if err := json.Unmarshal(m, &pl); err != nil {
		return err
	}
	p.mu.Lock()
	p.runs[pl.Key]++
	n := p.runs[pl.Key]
	p.mu.Unlock()
	_ = p.log.StartKey(pl.Key, n, p.clock())
	wctx := ctx
	if p.cfg.IgnoreContext {
		wctx = context.WithoutCancel(ctx)
	}
	select {
	case <-time.After(protocol.WorkFor(p.cfg.Seed, keyNumber(pl.Key), n, p.cfg.WorkMS[0], p.cfg.WorkMS[1])):
	case <-wctx.Done():
		_ = p.log.EndKey(pl.Key, n, p.clock(), protocol.ResultCancelled)
		return wctx.Err()
	}
	if url := p.cfg.EffectURL; url != "" {
		if _, err := effectdest.Send(wctx, url, effectdest.Call{Job: keyNumber(pl.Key), Key: "job-" + pl.Key, Fence: n}); err != nil {
			_ = p.log.EndKey(pl.Key, n, p.clock(), protocol.ResultFailed)
			return err
		}
	}
	_ = p.log.SendKey(protocol.OpComplete, pl.Key, n)
	_ = p.log.EndKey(pl.Key, n, p.clock(), protocol.ResultReturned)
	return nil
}

// keyNumber is the number a job's work is drawn by: the workload's key's own.
func keyNumber(key string) int64 {
	var n int64
	fmt.Sscanf(strings.TrimPrefix(key, "j"), "%d", &n)
	return n
}

// snapshot reports every message left (goqite deletes a done one): running while its
// timeout is ahead of the database's clock (received and not yet visible again), else ready
// (never received, or its timeout passed), dead once it was received as often as allowed.
func (p *program) snapshot(ctx context.Context) error {
	tx, err := p.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var from time.Time
	if err := tx.QueryRowContext(ctx, "SELECT clock_timestamp()").Scan(&from); err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, received, timeout > clock_timestamp() FROM goqite WHERE queue = $1 ORDER BY created`, queueName)
	if err != nil {
		return err
	}
	var evs []protocol.Event
	max := p.cfg.Settings["max_receive"]
	for rows.Next() {
		var id string
		var received int64
		var live bool
		if err := rows.Scan(&id, &received, &live); err != nil {
			return err
		}
		st := "ready"
		switch {
		case live && received > 0:
			st = "running"
		case received >= max:
			st = "dead"
		}
		evs = append(evs, protocol.Event{Ev: protocol.EvObserve, ID: id, State: st, Live: live, Attempts: received})
	}
	if err := rows.Err(); err != nil {
		return err
	}
	var to time.Time
	if err := tx.QueryRowContext(ctx, "SELECT clock_timestamp()").Scan(&to); err != nil {
		return err
	}
	for _, e := range evs {
		e.From, e.To = protocol.Micros(from), protocol.Micros(to)
		if err := p.log.Event(e); err != nil {
			return err
		}
	}
	return nil
}
