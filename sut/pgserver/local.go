package pgserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// localReadyTimeout bounds the wait for a freshly started cluster.
const localReadyTimeout = 30 * time.Second

// localPort is the port number in the socket name. The socket directory is
// private to each cluster, so clusters never clash on it.
const localPort = 5432

// pgBinaries is where initdb and postgres were found.
type pgBinaries struct {
	initdb, postgres string
}

// localCluster is an ephemeral cluster in a temporary directory.
type localCluster struct {
	dir     string // temp dir: socket, log, owner.pid; removed by stop
	dataDir string
	logPath string

	// How the postmaster is started, kept so that a crashed one can be started again.
	postgres string
	args     []string
	env      []string
	cred     *syscall.Credential

	mu      sync.Mutex // serializes stop, crash and restart
	pid     int
	proc    *os.Process
	done    chan struct{} // closed once the postmaster has exited
	stopped bool          // stop ran: a restart must not bring the server back
}

// findBinaries looks for initdb and postgres in PATH, then in
// `pg_config --bindir`, then in the highest /usr/lib/postgresql/*/bin. The
// second result says why none were found ("" when found).
func findBinaries() (pgBinaries, string) {
	if i, err := exec.LookPath("initdb"); err == nil {
		if p, err := exec.LookPath("postgres"); err == nil {
			return pgBinaries{initdb: i, postgres: p}, ""
		}
		// A lone initdb in PATH: look for postgres beside it.
		if b, ok := binariesIn(filepath.Dir(i)); ok {
			return b, ""
		}
	}
	if out, err := runQuick("pg_config", "--bindir"); err == nil {
		if b, ok := binariesIn(strings.TrimSpace(out)); ok {
			return b, ""
		}
	}
	var dirs []string
	for _, pat := range []string{"/usr/lib/postgresql/*/bin", "/usr/pgsql-*/bin"} {
		m, _ := filepath.Glob(pat)
		dirs = append(dirs, m...)
	}
	sort.SliceStable(dirs, func(i, j int) bool { return versionOfPath(dirs[i]) > versionOfPath(dirs[j]) })
	dirs = append(dirs, "/usr/local/pgsql/bin")
	for _, d := range dirs {
		if b, ok := binariesIn(d); ok {
			return b, ""
		}
	}
	return pgBinaries{}, "initdb and postgres not found in PATH, pg_config --bindir or /usr/lib/postgresql/*/bin"
}

func binariesIn(dir string) (pgBinaries, bool) {
	b := pgBinaries{initdb: filepath.Join(dir, "initdb"), postgres: filepath.Join(dir, "postgres")}
	for _, p := range []string{b.initdb, b.postgres} {
		fi, err := os.Stat(p)
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return pgBinaries{}, false
		}
	}
	return b, true
}

// versionOfPath extracts the major version from .../postgresql/15/bin or
// /usr/pgsql-15/bin (0 if none).
func versionOfPath(p string) float64 {
	for _, part := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '-' }) {
		if v, err := strconv.ParseFloat(part, 64); err == nil {
			return v
		}
	}
	return 0
}

func runQuick(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).Output()
	return string(out), err
}

// runAs returns the credential to run initdb and postgres with: they refuse
// to run as root, so root hands them to "postgres", else "nobody".
func runAs() (*syscall.Credential, string, error) {
	if os.Geteuid() != 0 {
		return nil, "", nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil || uid == 0 {
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, name, nil
	}
	return nil, "", errors.New(`running as root and neither user "postgres" nor "nobody" exists to run the server as`)
}

func startLocal(ctx context.Context, o Options) (*Server, error) {
	bins, why := findBinaries()
	if why != "" {
		return nil, errorf("PGQCHECK_PG=local but no PostgreSQL server binaries were found (%s); install them (Debian: apt-get install postgresql-15) or use PGQCHECK_PG=docker or PGQCHECK_DSN", why)
	}
	return startLocalWith(ctx, bins, o)
}

func startLocalWith(ctx context.Context, bins pgBinaries, o Options) (*Server, error) {
	cred, userName, err := runAs()
	if err != nil {
		return nil, errorf("local Postgres: %v", err)
	}
	sweepStaleClusters()

	base := os.TempDir()
	// A unix socket path must fit in ~107 bytes, and the server's user must
	// be able to reach the directory.
	if len(base) > 60 || (cred != nil && !traversableByOthers(base)) {
		base = "/tmp"
	}
	dir, err := os.MkdirTemp(base, "pgqcheck-")
	if err != nil {
		return nil, errorf("local Postgres: cannot create a temp dir: %v", err)
	}
	c := &localCluster{
		dir:     dir,
		dataDir: filepath.Join(dir, "data"),
		logPath: filepath.Join(dir, "postgres.log"),
	}
	ok := false
	defer func() {
		if !ok {
			_ = c.stop()
		}
	}()
	if err := os.WriteFile(filepath.Join(dir, "owner.pid"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return nil, errorf("local Postgres: %v", err)
	}
	// The socket lives in dir: others must be able to reach it.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, errorf("local Postgres: %v", err)
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, errorf("local Postgres: cannot hand %s to user %s: %v", dir, userName, err)
		}
	}
	env := []string{
		"PATH=" + filepath.Dir(bins.postgres) + ":/usr/bin:/bin",
		"HOME=" + dir,
		"LC_ALL=C",
		"LANG=C",
		"TZ=UTC",
	}

	// initdb
	initCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out, err := runLocked(initCtx, cred, dir, env, bins.initdb,
		"-D", c.dataDir, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
	if err != nil {
		return nil, errorf("local Postgres: %s failed (%v): %s", bins.initdb, err, tail(out, 6))
	}

	// postgres
	c.postgres, c.env, c.cred = bins.postgres, env, cred
	c.args = append([]string{
		"-D", c.dataDir,
		"-k", dir,
		"-p", strconv.Itoa(localPort),
		"-c", "listen_addresses=",
		"-c", "unix_socket_permissions=0777",
		"-c", "max_connections=200",
	}, settingArgs(o)...)
	if err := c.startPostmaster(); err != nil {
		return nil, err
	}

	dsnFor := func(db string) string {
		return fmt.Sprintf("host=%s port=%d user=postgres dbname=%s sslmode=disable", quoteKV(dir), localPort, quoteKV(db))
	}
	if err := c.waitReady(ctx, dsnFor("postgres")); err != nil {
		return nil, err
	}
	where := fmt.Sprintf("unix socket %s/.s.PGSQL.%d (pid %d, as user %s)", dir, localPort, c.postmasterPID(), orDefault(userName, currentUserName()))
	s, err := newServer(ctx, BackendLocal, where, dsnFor, "postgres")
	if err != nil {
		return nil, err
	}
	s.local = c
	s.stop = c.stop
	s.durable = o.Crash
	ok = true
	return s, nil
}

// startPostmaster starts the postmaster on the cluster's data directory, appending to its log.
func (c *localCluster) startPostmaster() error {
	logFile, err := os.OpenFile(c.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return errorf("local Postgres: %v", err)
	}
	started := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		// The kernel sends Pdeathsig when the thread that started the
		// child exits, not the process. Keep this goroutine on its own
		// thread, blocked in Wait, for as long as the server lives; the
		// thread then exits only with the postmaster or with this process.
		runtime.LockOSThread()
		defer close(done)
		defer logFile.Close()
		cmd := exec.Command(c.postgres, c.args...)
		cmd.Dir = c.dir
		cmd.Env = c.env
		cmd.Stdout = logFile
		cmd.Stderr = logFile
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Pdeathsig:  syscall.SIGQUIT, // immediate shutdown if we die
			Setpgid:    true,            // a terminal's Ctrl-C goes to us, and we stop it in order
			Credential: c.cred,
		}
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		c.proc = cmd.Process
		c.pid = cmd.Process.Pid
		started <- nil
		_ = cmd.Wait()
	}()
	c.done = done
	if err := <-started; err != nil {
		return errorf("local Postgres: cannot start %s: %v", c.postgres, err)
	}
	return nil
}

func (c *localCluster) postmasterPID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pid
}

// traversableByOthers reports whether every directory from / down to dir
// can be entered by any user.
func traversableByOthers(dir string) bool {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	for {
		fi, err := os.Stat(dir)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return true
		}
		dir = parent
	}
}

func orDefault(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

func currentUserName() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return strconv.Itoa(os.Getuid())
}

// runLocked runs a short helper program (initdb) with Pdeathsig set, so it
// does not outlive us either.
func runLocked(ctx context.Context, cred *syscall.Credential, dir string, env []string, name string, args ...string) ([]byte, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: cred}
	var buf bytes.Buffer
	cmd.Stdout = &buf
	cmd.Stderr = &buf
	err := cmd.Run()
	return buf.Bytes(), err
}

// waitReady polls a connection over the socket until the server answers.
func (c *localCluster) waitReady(ctx context.Context, dsn string) error {
	deadline := time.Now().Add(localReadyTimeout)
	var lastErr error
	for {
		select {
		case <-c.done:
			return errorf("local Postgres exited during startup; server log: %s", c.logTail())
		default:
		}
		attempt, cancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := connect(attempt, dsn)
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return nil
		}
		lastErr = err
		if ctx.Err() != nil {
			return errorf("local Postgres: startup interrupted (%v); server log: %s", ctx.Err(), c.logTail())
		}
		if time.Now().After(deadline) {
			return errorf("local Postgres did not accept connections within %s (%s); server log: %s", localReadyTimeout, rootCause(lastErr), c.logTail())
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-c.done:
		case <-ctx.Done():
		}
	}
}

func (c *localCluster) logTail() string {
	b, err := os.ReadFile(c.logPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	return tail(b, 6)
}

// tail returns the last n non-empty lines of b joined into one line.
func tail(b []byte, n int) string {
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 0 {
		return "(empty)"
	}
	return strings.Join(lines, " | ")
}

// stop shuts the postmaster down (fast, then immediate, then kill) and
// removes the directory.
func (c *localCluster) stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	var errs []error
	if c.proc != nil {
		stopped := false
		for _, step := range []struct {
			sig  syscall.Signal
			wait time.Duration
		}{{syscall.SIGINT, 10 * time.Second}, {syscall.SIGQUIT, 5 * time.Second}, {syscall.SIGKILL, 5 * time.Second}} {
			_ = c.proc.Signal(step.sig)
			select {
			case <-c.done:
				stopped = true
			case <-time.After(step.wait):
			}
			if stopped {
				break
			}
		}
		if !stopped {
			errs = append(errs, fmt.Errorf("postmaster pid %d did not exit", c.pid))
		}
	}
	// Backends a crashed postmaster left behind would keep the directory busy.
	if err := c.killOrphans(5 * time.Second); err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(c.dir); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return errorf("local Postgres: cleanup of %s: %v", c.dir, errors.Join(errs...))
	}
	return nil
}

// sweepStaleClusters removes cluster directories left by a process that
// died without cleaning up (its postmaster died with it).
func sweepStaleClusters() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "pgqcheck-*"))
	if os.TempDir() != "/tmp" {
		more, _ := filepath.Glob("/tmp/pgqcheck-*")
		dirs = append(dirs, more...)
	}
	for _, d := range dirs {
		owner, ok := readPID(filepath.Join(d, "owner.pid"))
		if !ok || processAlive(owner) {
			continue
		}
		if pm, ok := readPID(filepath.Join(d, "data", "postmaster.pid")); ok && processAlive(pm) {
			continue
		}
		_ = os.RemoveAll(d)
	}
}

func readPID(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	return pid, err == nil && pid > 0
}

// processAlive reports whether pid names a live (not zombie) process.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !os.IsNotExist(err)
	}
	// Format: pid (comm) state ...; comm may contain spaces or parens.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		st := s[i+2]
		return st != 'Z' && st != 'X'
	}
	return true
}
