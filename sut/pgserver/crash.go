package pgserver

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// Crash and restart: a server started with Options.Crash can be killed with SIGKILL, as a
// crash would end it, and started again on the same data directory, where it runs crash
// recovery. Only the local and docker backends own their server; the dsn backend refuses.

// errCrashDSN is why a crash test cannot run against PGQCHECK_DSN.
var errCrashDSN = errorf("a crash test kills -9 and restarts the server, and PGQCHECK_PG=dsn names one this suite does not own; use PGQCHECK_PG=local or PGQCHECK_PG=docker")

// crashExitTimeout bounds the wait for a killed server's processes to be gone.
const crashExitTimeout = 10 * time.Second

// CrashUnsupported says why this server cannot be crashed and restarted, in one line that
// names the fix ("" when it can).
func (s *Server) CrashUnsupported() string {
	switch {
	case s.Backend == BackendDSN:
		return strings.TrimPrefix(errCrashDSN.Error(), "pgqcheck: ")
	case !s.durable:
		return "the server was started without Options.Crash (fsync and synchronous_commit on, a data directory that survives a restart); start one with it"
	}
	return ""
}

// Crash kills the postmaster with SIGKILL and returns once none of the server's processes is
// left: the local cluster's backends, or the container, which stops with its postmaster.
// Sessions are cut; transactions not yet committed are gone; what committed must survive
// (the server runs with fsync and synchronous_commit on). Restart brings it back.
func (s *Server) Crash(ctx context.Context) error {
	if err := s.crashable("Crash"); err != nil {
		return err
	}
	if s.local != nil {
		return s.local.crash()
	}
	return s.docker.crash(ctx)
}

// Restart starts a crashed server again on the same data directory, at the same address, and
// returns once it accepts sessions (crash recovery done). Sessions must reconnect.
func (s *Server) Restart(ctx context.Context) error {
	if err := s.crashable("Restart"); err != nil {
		return err
	}
	if s.local != nil {
		return s.local.restart(ctx, s.dsnFor("postgres"))
	}
	return s.docker.restart(ctx)
}

// crashable is nil when s can be crashed and restarted now; method names the one asked, for
// its error.
func (s *Server) crashable(method string) error {
	if why := s.CrashUnsupported(); why != "" {
		return errorf("cannot %s %s: %s", strings.ToLower(method), s.Where, why)
	}
	if s.isClosed() {
		return errorf("%s on a closed server (%s)", method, s.Where)
	}
	return nil
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// DataDir is where a local cluster keeps its data ("" for the other backends): tests use it
// to find what a server left behind.
func (s *Server) DataDir() string {
	if s.local == nil {
		return ""
	}
	return s.local.dataDir
}

// Dir is the local cluster's temporary directory (socket, log, data), removed by Close; ""
// for the other backends.
func (s *Server) Dir() string {
	if s.local == nil {
		return ""
	}
	return s.local.dir
}

// ContainerID is the docker backend's container ("" for the other backends).
func (s *Server) ContainerID() string {
	if s.docker == nil {
		return ""
	}
	return s.docker.id
}

var settingRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.]*=.*$`)

func checkSettings(list []string) error {
	for _, kv := range list {
		if !settingRE.MatchString(kv) || strings.ContainsAny(kv, "\n\r") {
			return errorf("server setting %q is not name=value; write it as e.g. synchronous_commit=off", kv)
		}
	}
	return nil
}

// settingArgs are the server settings a backend starts with, as -c arguments. By default the
// server trades durability for speed (nothing here survives a machine crash anyway); a crash
// test needs every acknowledged commit to survive, so Options.Crash turns it back on.
// Options.Settings come last and win. Autovacuum is off: its worker takes a table's extension
// lock while a run's statements need it, and a statement waiting on a backend outside the run
// is a fault of the harness, not a verdict (the claim-cost lab vacuums its own table).
func settingArgs(o Options) []string {
	durability := "off"
	if o.Crash {
		durability = "on"
	}
	args := []string{
		"-c", "fsync=" + durability,
		"-c", "synchronous_commit=" + durability,
		"-c", "full_page_writes=" + durability,
		"-c", "autovacuum=off",
	}
	if o.Crash {
		// After a crash the server first syncs every file of the data directory, one fsync
		// each, most of a restart's time; syncfs does it in one call (PostgreSQL 14 and later).
		args = append(args, "-c", "recovery_init_sync_method=syncfs")
	}
	for _, kv := range o.Settings {
		args = append(args, "-c", kv)
	}
	return args
}

// crash kills the postmaster with SIGKILL, then waits for its backends, which notice their
// postmaster's death, to exit; those still there after crashExitTimeout are killed too. A new
// postmaster cannot start while an old backend holds the shared memory.
func (c *localCluster) crash() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return errorf("local Postgres: crash after the cluster was stopped")
	}
	select {
	case <-c.done:
		return errorf("local Postgres: crash, but the postmaster (pid %d) is not running; Restart it first", c.pid)
	default:
	}
	_ = c.proc.Signal(syscall.SIGKILL)
	select {
	case <-c.done:
	case <-time.After(crashExitTimeout):
		return errorf("local Postgres: postmaster pid %d did not die of SIGKILL within %s", c.pid, crashExitTimeout)
	}
	return c.killOrphans(crashExitTimeout)
}

// restart starts a new postmaster on the crashed cluster's data directory and waits until it
// accepts sessions.
func (c *localCluster) restart(ctx context.Context, dsn string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return errorf("local Postgres: restart after the cluster was stopped")
	}
	select {
	case <-c.done:
	default:
		return errorf("local Postgres: restart, but the postmaster (pid %d) is running; Crash it first", c.pid)
	}
	if err := c.startPostmaster(); err != nil {
		return err
	}
	return c.waitReady(ctx, dsn)
}

// killOrphans waits up to grace for the backends of a crashed postmaster to notice its death
// and exit, then kills those left with SIGKILL. A new postmaster refuses to start while one of
// them holds the old shared memory. PostgreSQL's children leave the postmaster's process
// group (setsid), but every one of them runs in the data directory, which is this cluster's
// own: that is how they are found.
func (c *localCluster) killOrphans(grace time.Duration) error {
	deadline := time.Now().Add(grace)
	for len(processesIn(c.dataDir)) > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	left := processesIn(c.dataDir)
	if len(left) == 0 {
		return nil
	}
	for _, pid := range left {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	for deadline = time.Now().Add(5 * time.Second); len(processesIn(c.dataDir)) > 0; {
		if time.Now().After(deadline) {
			return errorf("local Postgres: processes %v of the crashed server survive SIGKILL", processesIn(c.dataDir))
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// processesIn lists the live processes whose working directory is dir.
func processesIn(dir string) []int {
	cwds, _ := filepath.Glob("/proc/[0-9]*/cwd")
	var out []int
	for _, p := range cwds {
		if cwd, err := os.Readlink(p); err != nil || cwd != dir {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil && processAlive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// ProcessesUsing lists live processes whose command line or working directory names dir: what
// a cluster in dir would have left running.
func ProcessesUsing(dir string) []int {
	if dir == "" {
		return nil
	}
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var out []int
	for _, p := range cmdlines {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err != nil || pid == os.Getpid() || !processAlive(pid) {
			continue
		}
		b, _ := os.ReadFile(p)
		cwd, _ := os.Readlink(filepath.Join(filepath.Dir(p), "cwd"))
		if strings.Contains(string(b), dir) || cwd == dir || strings.HasPrefix(cwd, dir+"/") {
			out = append(out, pid)
		}
	}
	return out
}

// ContainerExists reports whether the container id still exists, running or not: tests use it
// to check that nothing outlived a server.
func ContainerExists(ctx context.Context, id string) (bool, error) {
	p, err := dockerProvider(ctx)
	if err != nil {
		return false, err
	}
	defer p.Close()
	ictx, cancel := context.WithTimeout(ctx, dockerCheckTimeout)
	defer cancel()
	if _, err := p.Client().ContainerInspect(ictx, id, client.ContainerInspectOptions{}); err != nil {
		if errdefs.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}
