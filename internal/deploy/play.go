package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgqcheck/pgqcheck/internal/deploy/observed"
	"github.com/pgqcheck/pgqcheck/internal/deploy/protocol"
	"github.com/pgqcheck/pgqcheck/internal/effectdest"
	"github.com/pgqcheck/pgqcheck/internal/faultproxy"
	"github.com/pgqcheck/pgqcheck/internal/linear/history"
)

// run is one deployment run in progress.
type run struct {
	cfg             Config
	scratch, report string
	bin             string
	dsn             string // the run's database
	moduleDir       string // the target's module, where its processes run
	dest            *effectdest.Dest
	effectURL       string
	res             *Result

	// where the server listens, and how a connection string to it reads for a proxy's port
	network, addr string
	dsnVia        func(addr string) string

	origin time.Time // the database's clock at the run's first reading
	local  time.Time // this machine's clock then
	b      *observed.Builder

	mu     sync.Mutex
	slots  []*slot
	lives  []*life // every process started, in order
	faults sync.WaitGroup
	failed error      // a fault that could not be injected
	server sync.Mutex // held while the server crashes and restarts
}

// life is one process of the run: a worker's life (w1, then w1/2 once it was killed and
// replaced), the enqueuer, a snapshot.
type life struct {
	label, role string
	events, out string
	proc        *proc
}

// slot is one worker's place in the run: its fault proxy, which outlives its processes.
type slot struct {
	n     int
	proxy *faultproxy.Proxy
	lives int
	cur   *life
}

// safe is a life's label as a file name.
func safe(label string) string { return strings.ReplaceAll(label, "/", "-") }

// play runs the deployment from setup to the last snapshot.
func (r *run) play(ctx context.Context) error {
	if err := r.where(); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(r.scratch, "events"), 0o755); err != nil {
		return err
	}
	if r.cfg.DB == nil {
		if err := r.once(ctx, protocol.RoleSetup, "setup"); err != nil {
			return err
		}
	} else if err := r.cfg.DB.Reset(ctx); err != nil {
		return err
	}
	if err := r.readOrigin(ctx); err != nil {
		return err
	}
	if r.cfg.Target.External {
		d, err := effectdest.Start(effectdest.Every)
		if err != nil {
			return err
		}
		r.dest, r.effectURL = d, d.URL()
	}
	workload := filepath.Join(r.scratch, "workload.jsonl")
	if err := protocol.WriteWorkload(workload, r.cfg.workload()); err != nil {
		return err
	}
	for n := 1; n <= r.cfg.Workers; n++ {
		p, err := faultproxy.Listen(r.network, r.addr)
		if err != nil {
			return fmt.Errorf("pgqcheck: a fault proxy for worker %d: %v", n, err)
		}
		s := &slot{n: n, proxy: p}
		r.slots = append(r.slots, s)
		if err := r.startWorker(s); err != nil {
			return err
		}
	}
	r.cfg.logf("deploy %s: %d workers, faults %s", r.cfg.Target.Name, r.cfg.Workers, r.res.Schedule.Summary())
	enq, err := r.start(protocol.RoleEnqueue, "enqueuer", r.dsn, func(c *protocol.Config) { c.Workload = workload })
	if err != nil {
		return err
	}
	start := time.Now()
	r.inject(ctx, start)
	select {
	case <-enq.proc.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	r.faults.Wait()
	if r.failed != nil {
		return r.failed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	r.cfg.logf("deploy %s: window over after %v; draining", r.cfg.Target.Name, time.Since(start).Round(time.Millisecond))
	if err := r.drain(ctx); err != nil {
		return err
	}
	r.mu.Lock()
	var workers []*life
	for _, s := range r.slots {
		workers = append(workers, s.cur)
	}
	r.mu.Unlock()
	drained := time.Now()
	for _, l := range workers {
		l.proc.stop(stopGrace)
	}
	r.cfg.logf("deploy %s: drained after %v, workers stopped in %v", r.cfg.Target.Name, drained.Sub(start).Round(time.Millisecond), time.Since(drained).Round(time.Millisecond))
	return r.once(ctx, protocol.RoleSnapshot, "snapshot")
}

// stopGrace is how long a worker asked to stop may finish its execution before it is killed.
const stopGrace = 5 * time.Second

// where reads where the run's database listens, and how a worker's connection string reads
// through a proxy.
func (r *run) where() error {
	c, err := pgx.ParseConfig(r.dsn)
	if err != nil {
		return fmt.Errorf("pgqcheck: the run's connection string: %v", err)
	}
	port := strconv.Itoa(int(c.Port))
	if strings.HasPrefix(c.Host, "/") {
		r.network, r.addr = "unix", filepath.Join(c.Host, ".s.PGSQL."+port)
	} else {
		r.network, r.addr = "tcp", net.JoinHostPort(c.Host, port)
	}
	r.dsnVia = func(addr string) string {
		host, p, _ := net.SplitHostPort(addr)
		dsn := fmt.Sprintf("host=%s port=%s user=%s dbname=%s sslmode=disable", host, p, quoteKV(c.User), quoteKV(c.Database))
		if c.Password != "" {
			dsn += " password=" + quoteKV(c.Password)
		}
		return dsn
	}
	return nil
}

// quoteKV quotes a connection string's value where it needs it.
func quoteKV(v string) string {
	if v != "" && !strings.ContainsAny(v, ` '\`) {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// readOrigin reads the database's clock once: every window of the run counts from it.
func (r *run) readOrigin(ctx context.Context) error {
	c, err := pgx.Connect(ctx, r.dsn)
	if err != nil {
		return fmt.Errorf("pgqcheck: connecting to the run's database: %v", err)
	}
	defer c.Close(context.Background())
	if err := c.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&r.origin); err != nil {
		return fmt.Errorf("pgqcheck: reading the database's clock: %v", err)
	}
	r.local = time.Now()
	r.b = &observed.Builder{Origin: r.origin, Lease: r.cfg.Target.Lease, TxBound: r.cfg.Target.Shape.TxBound}
	return nil
}

// dbNow estimates the database's clock now, as an offset from the origin: where a fault is
// shown on the timeline (nothing is judged by it).
func (r *run) dbNow() time.Duration { return time.Since(r.local) }

// config is a process's configuration in role.
func (r *run) config(role, label, dsn string) protocol.Config {
	t := r.cfg.Target
	return protocol.Config{Role: role, DSN: dsn, Events: r.eventsPath(label), Worker: label, Seed: r.cfg.Seed,
		Queue: t.Queue, LeaseMS: t.Lease.Milliseconds(), PollMS: 20, WorkMS: r.cfg.WorkMS, Settings: t.Settings,
		IgnoreContext: t.IgnoreContext, EffectURL: r.effectURL}
}

// start starts a process of the run's program in role, labelled label.
func (r *run) start(role, label, dsn string, adjust func(*protocol.Config)) (*life, error) {
	c := r.config(role, label, dsn)
	if adjust != nil {
		adjust(&c)
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	l := &life{label: label, role: role, events: c.Events, out: filepath.Join(r.scratch, safe(label)+".log")}
	out, err := openLog(l.out)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	path, args := r.bin, []string(nil)
	if wc := r.cfg.Target.WorkCommand; role == protocol.RoleWork && len(wc) > 0 {
		path, args = wc[0], wc[1:]
	}
	env := append(os.Environ(), protocol.EnvConfig+"="+string(raw))
	// A process runs in its module's folder: a library's program may read its own module's
	// files there (gue's migration is its module's migrations/schema.sql).
	p, err := startProc(path, args, env, r.moduleDir, out)
	if err != nil {
		return nil, fmt.Errorf("pgqcheck: starting %s (%s): %v", label, path, err)
	}
	l.proc = p
	r.mu.Lock()
	r.lives = append(r.lives, l)
	r.mu.Unlock()
	return l, nil
}

// once runs the program in role (setup, a snapshot) and waits for it to end; a failure is the
// harness's, with the process's output.
func (r *run) once(ctx context.Context, role, label string) error {
	l, err := r.start(role, label, r.dsn, nil)
	if err != nil {
		return err
	}
	select {
	case <-l.proc.done:
	case <-ctx.Done():
		l.proc.kill()
		return ctx.Err()
	}
	if l.proc.err != nil {
		return fmt.Errorf("pgqcheck: %s of %s failed (%v): %s", role, r.cfg.Target.Name, l.proc.err, tailOf(l.out))
	}
	return nil
}

// tailOf is the last lines of a process's output, for an error.
func tailOf(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return strings.Join(lines, " | ")
}

// startWorker starts the slot's next worker life, through the slot's proxy.
func (r *run) startWorker(s *slot) error {
	r.mu.Lock()
	s.lives++
	label := fmt.Sprintf("w%d", s.n)
	if s.lives > 1 {
		label = fmt.Sprintf("w%d/%d", s.n, s.lives)
	}
	r.mu.Unlock()
	l, err := r.start(protocol.RoleWork, label, r.dsnVia(s.proxy.Addr()), nil)
	if err != nil {
		return err
	}
	r.mu.Lock()
	s.cur = l
	r.mu.Unlock()
	return nil
}

// close stops whatever still runs: on any return of Run, also a failed one.
func (r *run) close() {
	r.mu.Lock()
	lives := append([]*life(nil), r.lives...)
	r.mu.Unlock()
	for _, l := range lives {
		if !l.proc.exited() {
			l.proc.kill()
		}
	}
	for _, s := range r.slots {
		s.proxy.Close()
	}
	if r.dest != nil {
		r.dest.Close()
	}
}

// drain waits for the workers to finish every job: until a snapshot shows none ready or
// running. It gives up once no job has finished for patience, and the last snapshot then
// shows what was left.
func (r *run) drain(ctx context.Context) error {
	patience := r.cfg.Target.Patience
	if patience == 0 {
		patience = 3*r.cfg.Target.Horizon + 4*time.Duration(r.cfg.WorkMS[1])*time.Millisecond + 3*time.Second
	}
	finished, since := -1, time.Now()
	for n := 0; ; n++ {
		label := fmt.Sprintf("drain-%d", n)
		if err := r.once(ctx, protocol.RoleSnapshot, label); err != nil {
			return err
		}
		evs, err := protocol.Read(r.eventsPath(label))
		if err != nil {
			return err
		}
		open, ended := 0, 0
		for _, e := range evs {
			switch e.Ev {
			case protocol.EvObserve:
				if e.State == "ready" || e.State == "running" {
					open++
				} else {
					ended++
				}
			}
		}
		r.forget(label)
		if open == 0 {
			return nil
		}
		if ended > finished {
			finished, since = ended, time.Now()
		}
		if time.Since(since) > patience {
			r.cfg.logf("deploy %s: %d jobs still open after %v without one finishing", r.cfg.Target.Name, open, patience)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// forget drops a drain's snapshot from the lives the history is built of.
func (r *run) forget(label string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, l := range r.lives {
		if l.label == label {
			r.lives = append(r.lives[:i], r.lives[i+1:]...)
			return
		}
	}
}

// collect reads every life's events into the history, and the destination's effects.
func (r *run) collect() error {
	if err := r.collectEvents(); err != nil {
		return err
	}
	if r.dest == nil {
		return nil
	}
	r.b.External = map[int64]int64{}
	for _, c := range r.dest.Counts().Jobs {
		id := c.Job
		if r.cfg.Target.ByKey {
			var ok bool
			if id, ok = r.b.JobOfKey(fmt.Sprintf("j%d", c.Job)); !ok {
				continue
			}
		}
		r.b.External[id] += int64(c.InForce)
	}
	return nil
}

func (r *run) collectEvents() error {
	lives := append([]*life(nil), r.lives...)
	sort.SliceStable(lives, func(i, j int) bool {
		return lives[i].role == protocol.RoleEnqueue && lives[j].role != protocol.RoleEnqueue
	})
	for _, l := range lives {
		if l.role == protocol.RoleSetup {
			continue
		}
		evs, err := protocol.Read(l.events)
		if err != nil {
			return err
		}
		r.b.Worker(l.label, evs)
	}
	return nil
}

// record adds a fault to the history, from at to until (database-time estimates).
func (r *run) record(kind FaultKind, target string, at, until time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if kind == Restart {
		target = history.CrashTarget
	}
	r.b.Fault(kind.HistoryName(), target, at, until)
}
