// Package deploy judges a queue as it runs: its real workers in processes of their own, an
// enqueuer, and faults from outside (a worker stalled past its lease, killed with jobs in
// hand, cut off from the database; the database restarted), with the fault times drawn from
// the run's seed. What the workers report of every statement and execution (the worker
// protocol, internal/deploy/protocol) becomes the history every other mode's checks read
// (internal/deploy/observed), so a deployment is judged by the same properties, with the same
// findings, as a scheduled or stress run; the checks only observed executions need come on top.
//
// A run: a database of its own, the queue installed by the program's setup role, one fault
// proxy per worker slot, the workers and the enqueuer started, the schedule played over the
// window while the workload is enqueued, every fault ended, the queue drained by the workers
// themselves, the workers stopped, a last snapshot, then the checks and the report folder.
// Every process, proxy and database a run starts is gone when it returns, whatever way it
// ends; an interrupt of the harness kills the workers too.
package deploy

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/deploy/observed"
	"github.com/pgqcheck/pgqcheck/internal/deploy/protocol"
	"github.com/pgqcheck/pgqcheck/internal/linear/check"
	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/internal/modroot"
	"github.com/pgqcheck/pgqcheck/sut"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

// Config is one deployment run.
type Config struct {
	// Server is where the run makes a database of its own, dropped when it ends; unless DB is
	// set, an installed database the run uses instead (emptied first), such as a campaign
	// worker's: then the target's queue must be the one installed there.
	Server *pgserver.Server
	DB     *sut.Installed
	// Crash crashes and restarts the server for a restart fault (nil: Server, where it can be).
	Crash  Crasher
	Target Target
	// Workers is how many worker processes run; Window how long faults are injected and
	// the workload enqueued.
	Workers int
	Window  time.Duration
	// Faults are the kinds the schedule draws from, a fault every Every on average.
	Faults []FaultKind
	Every  time.Duration
	// Schedule, when set, is injected instead of drawing one (a replay).
	Schedule Schedule
	// WorkMS bounds each execution's work; Rate is how many jobs a second the enqueuer adds
	// (0: as many as the workers can take).
	WorkMS [2]int64
	Rate   float64
	Seed   uint64
	// ReportDir is where the run's folder goes (under os.TempDir() when empty).
	ReportDir string
	// Log, when set, hears of the run's stages.
	Log io.Writer
	// Programs, when set, holds the worker programs across runs (nil: the run builds its own,
	// and removes them).
	Programs *Programs
}

// Crasher crashes the run's server and starts it again (a pgserver.Server started with
// Options.Crash is one).
type Crasher interface {
	Crash(ctx context.Context) error
	Restart(ctx context.Context) error
}

// Result is a run's outcome: what was injected and observed, and the verdict.
type Result struct {
	Target   string
	Seed     uint64
	Schedule Schedule
	// Enqueued is the jobs whose enqueue was acknowledged; Executions the handler runs the
	// workers reported; Effects the business effects the last snapshot counted (-1: the
	// queue counts none).
	Enqueued, Executions int
	Effects              int64
	History              *history.History
	Verdict              *check.Conclusion
	Observed             *observed.Verdict
	// Pending are the jobs the queue still held within its horizon (Lease) when the run ended,
	// left out of the checks.
	Pending []int64
	Lease   time.Duration
	// what the run's target let the checks judge beyond its history's shape
	scheduled   bool
	maxAttempts int64
	external    bool
	// FirstViolation is when, from the run's start, the history first broke a promise (-1: it
	// never did).
	FirstViolation time.Duration
	Dir            string // the report folder
	Build, Took    time.Duration
}

// OK reports whether every promise held.
func (r *Result) OK() bool { return r.Verdict.OK && r.Observed.OK() }

// defaults fills what a config leaves unset.
func (c Config) defaults() Config {
	t := c.Target
	c.Workers = cmp.Or(c.Workers, t.Workers, 3)
	c.Window = cmp.Or(c.Window, t.Window, 4*time.Second)
	if c.WorkMS == [2]int64{} {
		c.WorkMS = t.WorkMS
	}
	if c.Every == 0 {
		// A fault every horizon, where the horizon is short; six a window where it is long.
		c.Every = min(max(c.Target.Horizon, 300*time.Millisecond), c.Window/6)
	}
	if c.WorkMS == [2]int64{} {
		c.WorkMS = [2]int64{50, 150}
	}
	if c.Crash == nil && c.Server != nil && c.Server.CrashUnsupported() == "" {
		c.Crash = c.Server
	}
	if c.Rate == 0 {
		// Four fifths of what the workers can take: a stall or a kill leaves a backlog the
		// others work off within the window, and an idle worker is there to take a job a
		// fault took from its worker.
		mean := float64(c.WorkMS[0]+c.WorkMS[1]) / 2
		c.Rate = 0.8 * float64(c.Workers) * 1000 / max(mean, 1)
	}
	return c
}

func (c Config) check() error {
	if c.Server == nil && c.DB == nil {
		return fmt.Errorf("pgqcheck: a deployment run needs a server or a database")
	}
	if c.Target.Module == "" || c.Target.Package == "" {
		return fmt.Errorf("pgqcheck: deployment target %q names no program to build", c.Target.Name)
	}
	for _, f := range c.schedule() {
		if f.Kind == Restart && c.Crash == nil {
			why := "no server to crash was given"
			if c.Server != nil {
				why = c.Server.CrashUnsupported()
			}
			return fmt.Errorf("pgqcheck: the schedule restarts the server, and this one cannot be: %s", why)
		}
		if f.Worker > c.Workers {
			return fmt.Errorf("pgqcheck: the schedule names worker %d, and the run has %d", f.Worker, c.Workers)
		}
	}
	return nil
}

// schedule is the run's faults: the replayed ones, or drawn from the seed.
func (c Config) schedule() Schedule {
	if c.Schedule != nil {
		return c.Schedule.sorted()
	}
	return Draw(c.Seed, Plan{Kinds: c.Faults, Workers: c.Workers, Window: c.Window, Every: c.Every, Aim: c.Target.Aim,
		Horizon: c.Target.Horizon, WorkMin: time.Duration(c.WorkMS[0]) * time.Millisecond, WorkMax: time.Duration(c.WorkMS[1]) * time.Millisecond})
}

// workload draws the jobs the enqueuer adds over the window, at the config's rate.
func (c Config) workload() []protocol.Job {
	r := rand.New(rand.NewPCG(c.Seed, 0x776f726b6c6f6164))
	var out []protocol.Job
	gap := time.Duration(float64(time.Second) / c.Rate)
	for at := time.Duration(0); at < c.Window; at += span(r, gap/2, gap*3/2) {
		j := protocol.Job{Key: fmt.Sprintf("j%d", len(out)+1), AtMS: at.Milliseconds()}
		// One job in four asks to run later, up to two works later, where the queue takes a
		// run-at time.
		if c.Target.Scheduled && r.IntN(4) == 0 {
			j.DelayMS = span(r, time.Millisecond, 2*time.Duration(c.WorkMS[1])*time.Millisecond).Milliseconds()
		}
		out = append(out, j)
	}
	return out
}

func (c Config) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, format+"\n", args...)
	}
}

// Run runs one deployment and judges it. An error is the harness failing (or ctx ending),
// not a verdict on the queue.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg = cfg.defaults()
	if err := cfg.check(); err != nil {
		return nil, err
	}
	begin := time.Now()
	scratch, err := scratchDir("pgqcheck-deploy-run-")
	if err != nil {
		return nil, fmt.Errorf("pgqcheck: a scratch folder for the run: %v", err)
	}
	defer os.RemoveAll(scratch)
	dir := cfg.ReportDir
	if dir == "" {
		dir = os.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	report, err := os.MkdirTemp(dir, "pgqcheck-deploy-"+cfg.Target.Name+"-")
	if err != nil {
		return nil, fmt.Errorf("pgqcheck: the run's report folder: %v", err)
	}
	r := &run{cfg: cfg, scratch: scratch, report: report, res: &Result{Target: cfg.Target.Name, Seed: cfg.Seed, Schedule: cfg.schedule(),
		Dir: report, FirstViolation: -1, Lease: cfg.Target.Lease, scheduled: cfg.Target.Scheduled, maxAttempts: cfg.Target.MaxAttempts, external: cfg.Target.External}}
	progs := cfg.Programs
	if progs == nil {
		if progs, err = NewPrograms(); err != nil {
			return nil, err
		}
		defer progs.Close()
	}
	built, err := progs.Build(ctx, cfg.Target.Module, cfg.Target.Package)
	if err != nil {
		return nil, err
	}
	r.bin, r.res.Build, r.moduleDir = built.Path, built.Took, built.Dir
	cfg.logf("deploy %s: built %s in %v", cfg.Target.Name, cfg.Target.Package, built.Took.Round(time.Millisecond))
	if cfg.DB != nil {
		r.dsn = cfg.DB.DSN
	} else {
		db, err := cfg.Server.CreateDatabase(ctx, "pgqcheck_deploy_"+cfg.Target.Name)
		if err != nil {
			return nil, err
		}
		defer func() {
			if err := db.Drop(context.Background()); err != nil {
				cfg.logf("deploy %s: dropping %s: %v", cfg.Target.Name, db.Name, err)
			}
		}()
		r.dsn = db.DSN
	}
	defer r.close()
	if err := r.play(ctx); err != nil {
		return nil, err
	}
	played := time.Now()
	if err := r.judge(); err != nil {
		return nil, err
	}
	judged := time.Now()
	r.res.Took = time.Since(begin)
	if err := r.write(); err != nil {
		return r.res, err
	}
	cfg.logf("deploy %s: played in %v, judged in %v, reported in %v", cfg.Target.Name, played.Sub(begin).Round(time.Millisecond),
		judged.Sub(played).Round(time.Millisecond), time.Since(judged).Round(time.Millisecond))
	return r.res, nil
}

// saveJSON writes v as indented JSON.
func saveJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// eventsPath is where a life's events go.
func (r *run) eventsPath(life string) string {
	return filepath.Join(r.scratch, "events", safe(life)+".jsonl")
}

// Spec is a run as its report folder keeps it (run.json): what a replay runs again, the same
// workload under the same fault schedule.
type Spec struct {
	Target   string        `json:"target"`
	Source   string        `json:"source"`
	Queue    string        `json:"queue,omitempty"` // a queue of SQL's folder, or a built-in's name
	Seed     uint64        `json:"seed"`
	Workers  int           `json:"workers"`
	Window   time.Duration `json:"window"`
	WorkMS   [2]int64      `json:"work_ms"`
	Rate     float64       `json:"rate"`
	Lease    time.Duration `json:"lease"`
	Horizon  time.Duration `json:"horizon"`
	Schedule Schedule      `json:"schedule"`
}

func (r *run) spec() Spec {
	c, t := r.cfg, r.cfg.Target
	queue := t.Queue
	// A folder inside the module is kept relative to its root, so that the replay resolves
	// in another checkout.
	if root, ok := modroot.Here(); ok && filepath.IsAbs(queue) {
		if rel, err := filepath.Rel(root, queue); err == nil && !strings.HasPrefix(rel, "..") {
			queue = rel
		}
	}
	return Spec{Target: t.Name, Source: t.Source, Queue: queue, Seed: c.Seed, Workers: c.Workers, Window: c.Window, WorkMS: c.WorkMS,
		Rate: c.Rate, Lease: t.Lease, Horizon: t.Horizon, Schedule: r.res.Schedule}
}
