package pgserver

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"pgregory.net/rapid"

	"github.com/pgqcheck/pgqcheck/internal/rapidrun"
)

// helperEnv makes the test binary act as a helper process (see TestMain).
const helperEnv = "PGQCHECK_PGSERVER_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "local-then-hang":
		helperLocalThenHang()
		return
	case "shared-then-hang":
		helperSharedThenHang()
		return
	case "shared-then-check":
		helperSharedThenCheck()
		return
	case "scratch-then-hang":
		helperScratchThenHang()
		return
	}
	os.Exit(Main(m))
}

// helperLocalThenHang starts a local cluster, reports it on stdout and waits
// to be killed.
func helperLocalThenHang() {
	s, err := Start(context.Background(), Options{Kind: "local", Log: io.Discard})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Printf("READY %d %s\n", s.local.pid, s.local.dir)
	select {}
}

// helperScratchThenHang makes a folder, has an interrupt remove it, reports it and waits for a
// signal, with no server started.
func helperScratchThenHang() {
	dir, err := os.MkdirTemp(os.Getenv("PGQCHECK_HELPER_DIR"), "scratch-")
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	OnInterrupt(func() { _ = os.RemoveAll(dir) })
	fmt.Printf("READY 0 %s\n", dir)
	select {}
}

// helperSharedThenHang starts the shared server (from the environment),
// reports it and waits for a signal.
func helperSharedThenHang() {
	s, err := Shared(context.Background())
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	if s.local != nil {
		fmt.Printf("READY %d %s\n", s.local.pid, s.local.dir)
	} else {
		fmt.Printf("READY 0 %s\n", s.Backend)
	}
	select {}
}

// helperSharedThenCheck starts the shared server, reports it, and runs a rapid property that
// asks the server something at every step until it is signalled, in the folder that
// PGQCHECK_HELPER_DIR names, where rapid would save its fail files.
func helperSharedThenCheck() {
	flag.Parse() // rapid reads the test flags
	s, err := Shared(context.Background())
	if err == nil {
		err = os.Chdir(os.Getenv("PGQCHECK_HELPER_DIR"))
	}
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	check := func() (string, bool) {
		return rapidrun.Check("TestAsksTheServer", func(t *rapid.T) {
			rapid.IntRange(0, 9).Draw(t, "n")
			conn, err := connect(context.Background(), s.dsnFor(s.adminDB()))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			time.Sleep(time.Millisecond)
		})
	}
	if out, failed := check(); failed {
		fmt.Println("ERROR the property failed with its server up:", out)
		os.Exit(1)
	}
	fmt.Printf("READY %d %s\n", s.local.pid, s.local.dir)
	for {
		check()
	}
}

func needLocal(t *testing.T) {
	t.Helper()
	if _, why := findBinaries(); why != "" {
		t.Skipf("no PostgreSQL server binaries on this machine: %s", why)
	}
}

func startLocalT(t *testing.T) *Server {
	t.Helper()
	needLocal(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Start(ctx, Options{Kind: "local", Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func queryString(t *testing.T, dsn, sql string, args ...any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect %q: %v", dsn, err)
	}
	defer conn.Close(context.Background())
	var out string
	if err := conn.QueryRow(ctx, sql, args...).Scan(&out); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}

func checkOneLineError(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one containing %q", want)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "pgqcheck: ") {
		t.Errorf("error does not start with \"pgqcheck: \": %q", msg)
	}
	if strings.ContainsAny(msg, "\r\n") {
		t.Errorf("error is not one line: %q", msg)
	}
	if !strings.Contains(msg, want) {
		t.Errorf("error %q does not contain %q", msg, want)
	}
}

func TestLocalBackend(t *testing.T) {
	s := startLocalT(t)
	t.Logf("local startup: %s", s.StartupTime)
	t.Log(s.Banner())
	if s.Backend != BackendLocal || s.Version == "" {
		t.Fatalf("backend %q version %q", s.Backend, s.Version)
	}
	if !strings.HasPrefix(s.Banner(), "pgqcheck: backend=local server=PostgreSQL ") {
		t.Errorf("banner: %q", s.Banner())
	}
	pid, dir := s.local.pid, s.local.dir
	if got := queryString(t, s.dsnFor("postgres"), "SELECT 1::text"); got != "1" {
		t.Fatalf("SELECT 1 gave %q", got)
	}

	ctx := context.Background()
	begin := time.Now()
	d, err := s.CreateDatabase(ctx, "pgqcheck_test")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("CreateDatabase: %s", time.Since(begin))
	if !strings.HasPrefix(d.Name, "pgqcheck_test_") {
		t.Errorf("database name %q", d.Name)
	}
	if got := queryString(t, d.DSN, "SELECT current_database()"); got != d.Name {
		t.Fatalf("connected to %q, want %q", got, d.Name)
	}
	// A session left open must not stop Drop.
	conn, err := pgx.Connect(ctx, d.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	begin = time.Now()
	if err := d.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("Drop: %s", time.Since(begin))
	if err := d.Drop(ctx); err != nil {
		t.Fatalf("second Drop: %v", err)
	}
	if n := queryString(t, s.dsnFor("postgres"), "SELECT count(*)::text FROM pg_database WHERE datname = $1", d.Name); n != "0" {
		t.Fatalf("database %s still there", d.Name)
	}
	// One left for Close.
	if _, err := s.CreateDatabase(ctx, "pgqcheck_left"); err != nil {
		t.Fatal(err)
	}

	begin = time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("local Close: %s", time.Since(begin))
	if processAlive(pid) {
		t.Errorf("postmaster pid %d still alive after Close", pid)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("cluster dir %s still there after Close (%v)", dir, err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := s.CreateDatabase(ctx, "x"); err == nil {
		t.Error("CreateDatabase after Close succeeded")
	}
}

// startHelper runs the test binary as the helper mode names (TestMain), with env added, and
// reads the cluster it reports on its first line, "READY pid dir". The helper is killed when
// the test ends, unless the test waited for its end.
func startHelper(t *testing.T, mode string, env ...string) (cmd *exec.Cmd, pid int, dir string) {
	t.Helper()
	cmd = exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), helperEnv+"="+mode), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if !sc.Scan() {
			close(first)
			return
		}
		first <- sc.Text()
	}()
	var line string
	select {
	case l, ok := <-first:
		if !ok {
			t.Fatal("helper said nothing")
		}
		line = l
	case <-time.After(60 * time.Second):
		t.Fatal("helper did not report within 60s")
	}
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != "READY" {
		t.Fatalf("helper said %q", line)
	}
	pid, _ = strconv.Atoi(f[1])
	return cmd, pid, f[2]
}

// TestLocalDiesWithParent kills (SIGKILL) a process that started a local
// cluster and checks that the postmaster goes too.
func TestLocalDiesWithParent(t *testing.T) {
	needLocal(t)
	cmd, pid, dir := startHelper(t, "local-then-hang")
	if !processAlive(pid) {
		t.Fatalf("postmaster %d not alive before the kill", pid)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	begin := time.Now()
	for processAlive(pid) {
		if time.Since(begin) > 10*time.Second {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("postmaster %d still alive 10s after its parent was killed", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("postmaster %d gone %s after its parent was killed", pid, time.Since(begin))
	// The directory it left is swept by the next start.
	sweepStaleClusters()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		_ = os.RemoveAll(dir)
		t.Errorf("stale cluster dir %s not swept", dir)
	}
}

// TestSharedInterrupt sends SIGINT to a process using Shared and checks that
// it removes its cluster and exits 130.
func TestSharedInterrupt(t *testing.T) {
	needLocal(t)
	cmd, pid, dir := startHelper(t, "shared-then-hang", EnvPG+"=local")
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Errorf("helper ended with %v, want exit status 130", err)
	}
	if processAlive(pid) {
		t.Errorf("postmaster %d still alive", pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("cluster dir %s still there (%v)", dir, err)
		_ = os.RemoveAll(dir)
	}
}

// TestInterruptKeepsNoFailFile: a rapid property that fails because its server was stopped by
// the interrupt leaves no fail file to replay.
func TestInterruptKeepsNoFailFile(t *testing.T) {
	needLocal(t)
	dir := t.TempDir()
	cmd, _, _ := startHelper(t, "shared-then-check", EnvPG+"=local", "PGQCHECK_HELPER_DIR="+dir)
	time.Sleep(200 * time.Millisecond) // checks under way
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("the helper exited 0 on SIGINT")
	}
	var left []string
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			left = append(left, path)
		}
		return nil
	})
	if len(left) > 0 {
		t.Fatalf("the interrupted check left %v", left)
	}
}

// A test binary's scratch folder goes with an interrupted run, also one that started no server
// (a Ctrl-C before the first test needed one).
func TestInterruptRunsHooks(t *testing.T) {
	cmd, _, dir := startHelper(t, "scratch-then-hang", "PGQCHECK_HELPER_DIR="+t.TempDir())
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("the helper exited %d (%v) on SIGINT, not 130", code, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the interrupted helper left %s (%v)", dir, err)
	}
}

func TestBadInput(t *testing.T) {
	ctx := context.Background()
	t.Run("unknown kind", func(t *testing.T) {
		_, err := Start(ctx, Options{Kind: "foo", Log: io.Discard})
		checkOneLineError(t, err, `unknown PGQCHECK_PG="foo"; use auto, dsn, docker or local`)
	})
	t.Run("dsn kind without dsn", func(t *testing.T) {
		_, err := Start(ctx, Options{Kind: "dsn", Log: io.Discard})
		checkOneLineError(t, err, "PGQCHECK_DSN is empty")
	})
	t.Run("malformed dsn", func(t *testing.T) {
		_, err := Start(ctx, Options{Kind: "dsn", DSN: "postgres://x:y@host:notaport/db", Log: io.Discard})
		checkOneLineError(t, err, "PGQCHECK_DSN is not a valid connect string")
	})
	for _, kind := range []string{"dsn", "auto"} {
		t.Run("unreachable dsn "+kind, func(t *testing.T) {
			begin := time.Now()
			_, err := Start(ctx, Options{Kind: kind, DSN: "postgres://127.0.0.1:1/x", Log: io.Discard})
			checkOneLineError(t, err, "cannot reach PGQCHECK_DSN (host=127.0.0.1 port=1: ")
			if d := time.Since(begin); d > 7*time.Second {
				t.Errorf("took %s", d)
			}
			t.Log(err)
		})
	}
	t.Run("docker image missing", func(t *testing.T) {
		begin := time.Now()
		_, err := Start(ctx, Options{Kind: "docker", Image: "pgqcheck/surely-not-present:0.0.0", Log: io.Discard})
		if d := time.Since(begin); d > 10*time.Second {
			t.Errorf("took %s", d)
		}
		if err != nil && strings.Contains(err.Error(), "no Docker engine answers") {
			checkOneLineError(t, err, "PGQCHECK_PG=docker but no Docker engine answers (")
			t.Logf("no Docker engine here: %v", err)
			return
		}
		checkOneLineError(t, err, "image pgqcheck/surely-not-present:0.0.0 is not present and nothing is pulled; load or build it first, e.g. bash scripts/build-pg-image.sh --from-debian 18.6 builds pgqcheck/postgres:18.6")
		t.Log(err)
	})
	t.Run("docker default image missing", func(t *testing.T) {
		withDefaultImages(t, "pgqcheck/surely-not-present:18.6", "pgqcheck/surely-not-present-either:18.6")
		begin := time.Now()
		_, err := Start(ctx, Options{Kind: "docker", Log: io.Discard})
		if d := time.Since(begin); d > 10*time.Second {
			t.Errorf("took %s", d)
		}
		if err != nil && strings.Contains(err.Error(), "no Docker engine answers") {
			t.Skipf("no Docker engine here: %v", err)
		}
		checkOneLineError(t, err, "PGQCHECK_PG=docker but neither pgqcheck/surely-not-present:18.6 nor pgqcheck/surely-not-present-either:18.6 is present and nothing is pulled; build one with: bash scripts/build-pg-image.sh --from-debian 18.6 (")
		t.Log(err)
	})
	t.Run("auto without default image falls through to local", func(t *testing.T) {
		needLocal(t)
		withDefaultImages(t, "pgqcheck/surely-not-present:18.6")
		var banner strings.Builder
		s, err := Start(ctx, Options{Kind: "auto", Log: &banner})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if s.Backend != BackendLocal || !strings.HasPrefix(banner.String(), "pgqcheck: backend=local server=PostgreSQL ") {
			t.Errorf("backend %s, banner %q", s.Backend, banner.String())
		}
	})
}

// withDefaultImages makes the docker backend's default lookup try images
// for the rest of the test.
func withDefaultImages(t *testing.T, images ...string) {
	old := DefaultImages
	DefaultImages = images
	t.Cleanup(func() { DefaultImages = old })
}

func TestBuildCommand(t *testing.T) {
	for image, want := range map[string]string{
		"postgres:18.6":          "bash scripts/build-pg-image.sh --from-debian 18.6",
		"pgqcheck/postgres:18.6": "bash scripts/build-pg-image.sh --from-debian 18.6",
		"pgqcheck/postgres:17":   "bash scripts/build-pg-image.sh --from-debian 17",
		"pgqcheck/postgres:15":   "bash scripts/build-pg-image.sh",
		"example/other:1":        "",
	} {
		if got := BuildCommand(image); got != want {
			t.Errorf("BuildCommand(%q) = %q, want %q", image, got, want)
		}
	}
}

// TestDockerBackend runs only when PGQCHECK_PG=docker: CI runs it with
// PGQCHECK_IMAGE=pgqcheck/postgres:15 after scripts/build-pg-image.sh, and
// with PGQCHECK_IMAGE unset (the default lookup) after
// scripts/build-pg-image.sh --from-debian 18.6.
func TestDockerBackend(t *testing.T) {
	o := OptionsFromEnv()
	if o.Kind != "docker" {
		t.Skip("PGQCHECK_PG is not docker; run: bash scripts/build-pg-image.sh --from-debian 18.6 && PGQCHECK_PG=docker go test -run Docker ./sut/pgserver/")
	}
	o.Log = io.Discard
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, err := Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t.Logf("docker startup: %s", s.StartupTime)
	t.Log(s.Banner())
	if s.Backend != BackendDocker || s.Version == "" || s.docker == nil {
		t.Fatalf("backend %q version %q", s.Backend, s.Version)
	}
	id := s.docker.id

	d, err := s.CreateDatabase(ctx, "pgqcheck_docker")
	if err != nil {
		t.Fatal(err)
	}
	if got := queryString(t, d.DSN, "SELECT current_database()"); got != d.Name {
		t.Fatalf("connected to %q, want %q", got, d.Name)
	}
	if err := d.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	if n := queryString(t, s.dsnFor("postgres"), "SELECT count(*)::text FROM pg_database WHERE datname = $1", d.Name); n != "0" {
		t.Fatalf("database %s still there", d.Name)
	}

	begin := time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("docker Close: %s", time.Since(begin))

	for _, c := range ownContainers(t, ctx) {
		t.Errorf("container %s (%s) still there after Close", c.ID, c.State)
		if c.ID == id {
			t.Errorf("it is the server's own container")
		}
	}
}

func TestDSNBackend(t *testing.T) {
	local := startLocalT(t)
	dsn := local.dsnFor("postgres")
	ctx := context.Background()

	s, err := Start(ctx, Options{Kind: "dsn", DSN: dsn, Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("dsn startup: %s", s.StartupTime)
	t.Log(s.Banner())
	if s.Backend != BackendDSN || s.Version != local.Version {
		t.Fatalf("backend %q version %q (local %q)", s.Backend, s.Version, local.Version)
	}
	var names []string
	for i := 0; i < 3; i++ {
		d, err := s.CreateDatabase(ctx, "pgqcheck")
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, d.Name)
		if got := queryString(t, d.DSN, "SELECT current_database()"); got != d.Name {
			t.Fatalf("connected to %q, want %q", got, d.Name)
		}
		if i == 0 {
			if err := d.Drop(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if names[0] == names[1] || names[1] == names[2] {
		t.Fatalf("names not unique: %v", names)
	}
	count := func() string {
		return queryString(t, dsn, `SELECT count(*)::text FROM pg_database WHERE datname LIKE 'pgqcheck\_%'`)
	}
	if n := count(); n != "2" {
		t.Fatalf("%s pgqcheck_ databases before Close, want 2", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != "0" {
		t.Fatalf("%s pgqcheck_ databases left after Close", n)
	}
	// The server itself is untouched.
	if got := queryString(t, dsn, "SELECT 1::text"); got != "1" {
		t.Fatalf("server gone? %q", got)
	}

	// auto with a DSN picks dsn.
	a, err := Start(ctx, Options{DSN: dsn, Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if a.Backend != BackendDSN {
		t.Errorf("auto with DSN chose %s", a.Backend)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestShared(t *testing.T) {
	if os.Getenv(EnvPG) == "" && os.Getenv(EnvDSN) == "" {
		needLocal(t) // auto may pick docker or local
	}
	ctx := context.Background()
	s1, err := Shared(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := Shared(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s1 != s2 {
		t.Fatal("Shared returned two servers")
	}
	t.Logf("shared: %s", s1.Banner())
	d, err := s1.CreateDatabase(ctx, "pgqcheck_shared")
	if err != nil {
		t.Fatal(err)
	}
	if got := queryString(t, d.DSN, "SELECT current_database()"); got != d.Name {
		t.Fatalf("connected to %q, want %q", got, d.Name)
	}
}

func TestDSNWithDatabase(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"postgres://u:p@h:5432/old?sslmode=disable", "postgres://u:p@h:5432/new?sslmode=disable"},
		{"postgres://u:p@h:5432", "postgres://u:p@h:5432/new"},
		{"postgresql://h1:5432,h2:5433/old", "postgresql://h1:5432,h2:5433/new"},
		{"postgres://h/?dbname=old&sslmode=require", "postgres://h/new?sslmode=require"},
		{"postgres://u@%2Ftmp%2Fsock/old", "postgres://u@%2Ftmp%2Fsock/new"},
		{"host=/tmp/x dbname=old", "host=/tmp/x dbname=old dbname=new"},
	} {
		got := dsnWithDatabase(c.in, "new")
		if got != c.want {
			t.Errorf("dsnWithDatabase(%q) = %q, want %q", c.in, got, c.want)
		}
		cfg, err := pgx.ParseConfig(got)
		if err != nil {
			t.Errorf("%q does not parse: %v", got, err)
		} else if cfg.Database != "new" {
			t.Errorf("%q: database %q", got, cfg.Database)
		}
	}
}

func TestDatabaseName(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range []string{"", "pgqcheck", "Weird-Name!", "9lives", strings.Repeat("x", 100)} {
		n := databaseName(p)
		if len(n) > 63 || n != strings.ToLower(n) || seen[n] {
			t.Errorf("databaseName(%q) = %q", p, n)
		}
		seen[n] = true
		for _, r := range n {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
				t.Errorf("databaseName(%q) = %q", p, n)
			}
		}
		if n[0] >= '0' && n[0] <= '9' {
			t.Errorf("databaseName(%q) = %q starts with a digit", p, n)
		}
	}
}

// ownContainers lists the containers this process started, running or not (by the pid label
// startDocker gives them).
func ownContainers(t *testing.T, ctx context.Context) []container.Summary {
	t.Helper()
	p, err := dockerProvider(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	res, err := p.Client().ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", LabelPID+"="+strconv.Itoa(os.Getpid())),
	})
	if err != nil {
		t.Fatal(err)
	}
	return res.Items
}

// TestNoAutovacuum: a server the suite starts runs no autovacuum worker, whose extension lock a
// run's statements would wait on as on a backend outside the run.
func TestNoAutovacuum(t *testing.T) {
	needLocal(t)
	ctx := context.Background()
	s, err := Start(ctx, Options{Kind: "local", Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	conn, err := connect(ctx, s.dsnFor(s.adminDB()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v string
	if err := conn.QueryRow(ctx, "SHOW autovacuum").Scan(&v); err != nil || v != "off" {
		t.Fatalf("autovacuum = %q (%v), want off", v, err)
	}
}
