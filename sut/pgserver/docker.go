package pgserver

import (
	"context"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/modules/postgres"
	"github.com/testcontainers/testcontainers-go/wait"
)

// Labels put on every container this package starts, so that a stray one
// can be found: docker ps -a --filter label=pgqcheck=1
const (
	LabelApp  = "pgqcheck"      // always "1"
	LabelPID  = "pgqcheck.pid"  // pid of the process that started it
	LabelHost = "pgqcheck.host" // hostname of that process
)

const (
	dockerCheckTimeout = 3 * time.Second  // engine health and image inspect
	dockerReadyTimeout = 60 * time.Second // container start until Postgres answers
	dockerStopTimeout  = 30 * time.Second
)

type dockerServer struct {
	ctr *postgres.PostgresContainer
	id  string
}

var tcOnce sync.Once

// prepareTestcontainers runs once before the first Docker provider is made.
//
// It sets TESTCONTAINERS_RYUK_DISABLED=true unless the user set it: Ryuk,
// testcontainers' reaper, runs from the testcontainers/ryuk image, which
// cannot be pulled where no registry is reachable, and container starts would
// fail on it. Our containers are removed by Server.Close instead (and by
// CleanupOnInterrupt on Ctrl-C; a container left by a killed process is
// removed by the next start on the same host, see sweepStaleContainers).
// testcontainers reads its configuration once per process, hence "before the
// first provider".
//
// It points testcontainers at 127.0.0.1 for published ports when the Docker
// engine shares our network namespace although we run inside a container
// (see localEngineHost).
//
// It also quiets testcontainers' default logger, which prints a multi-line
// "Connected to docker" report on first contact; a logger set by the program
// is left alone. Failures come back as our own one-line errors.
func prepareTestcontainers() {
	tcOnce.Do(func() {
		if _, std := tclog.Default().(*stdlog.Logger); std {
			tclog.SetDefault(quietLogger)
		}
		if _, set := os.LookupEnv("TESTCONTAINERS_RYUK_DISABLED"); !set {
			_ = os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
		}
		if _, set := os.LookupEnv("TESTCONTAINERS_HOST_OVERRIDE"); !set && localEngineHost() {
			_ = os.Setenv("TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1")
		}
	})
}

// localEngineHost reports whether published ports are to be reached on
// 127.0.0.1 although testcontainers would not use it. Inside a container
// (/.dockerenv) with a unix-socket engine, testcontainers assumes a sibling
// container and uses the bridge or default gateway. When the engine runs in
// this very container, as on Docker-in-Docker CI machines, its docker0 bridge
// is one of our interfaces and its port proxies listen on our loopback, while
// the default gateway is some other machine.
func localEngineHost() bool {
	if _, err := os.Stat("/.dockerenv"); err != nil {
		return false
	}
	if h := os.Getenv("DOCKER_HOST"); h != "" && !strings.HasPrefix(h, "unix://") {
		return false
	}
	_, err := net.InterfaceByName("docker0")
	return err == nil
}

// quietLogger keeps testcontainers' multi-line chatter off the test output;
// failures are reported through our own one-line errors.
var quietLogger = tclog.NewNoopLogger()

// dockerProvider returns a provider whose engine answered a health check.
func dockerProvider(ctx context.Context) (*testcontainers.DockerProvider, error) {
	prepareTestcontainers()
	p, err := testcontainers.NewDockerProvider(testcontainers.WithLogger(quietLogger))
	if err != nil {
		return nil, err
	}
	hctx, cancel := context.WithTimeout(ctx, dockerCheckTimeout)
	defer cancel()
	if err := p.Health(hctx); err != nil {
		_ = p.Close()
		return nil, err
	}
	return p, nil
}

// imagePresent reports whether image is in the engine's local store, and
// the PGDATA its environment sets ("" if none).
func imagePresent(ctx context.Context, c client.APIClient, image string) (bool, string, error) {
	ictx, cancel := context.WithTimeout(ctx, dockerCheckTimeout)
	defer cancel()
	res, err := c.ImageInspect(ictx, image)
	if err != nil {
		if errdefs.IsNotFound(err) {
			return false, "", nil
		}
		return false, "", err
	}
	pgdata := ""
	if res.Config != nil {
		for _, e := range res.Config.Env {
			if v, ok := strings.CutPrefix(e, "PGDATA="); ok {
				pgdata = v
			}
		}
	}
	return true, pgdata, nil
}

// resolveImage returns the image to run: image itself if it is present, or,
// for image "" (PGQCHECK_IMAGE unset), the first of DefaultImages present.
// When there is none it returns "" and why, in words that name the build
// command.
func resolveImage(ctx context.Context, c client.APIClient, image string) (string, string, error) {
	candidates := []string{image}
	if image == "" {
		candidates = DefaultImages
	}
	for _, im := range candidates {
		ok, pgdata, err := imagePresent(ctx, c, im)
		if err != nil {
			return "", "", errorf("cannot inspect image %s (%s)", im, rootCause(err))
		}
		if ok {
			return im, pgdata, nil
		}
	}
	return "", "", nil
}

// dockerUsable says why auto cannot use docker ("" if it can), and the
// image it would run.
func dockerUsable(ctx context.Context, image string) (string, string) {
	p, err := dockerProvider(ctx)
	if err != nil {
		return "", "no engine answers (" + rootCause(err) + ")"
	}
	defer p.Close()
	im, _, err := resolveImage(ctx, p.Client(), image)
	if err != nil {
		return "", strings.TrimPrefix(err.Error(), "pgqcheck: ")
	}
	if im == "" {
		if image == "" {
			return "", "neither " + strings.Join(DefaultImages, " nor ") + " is present"
		}
		return "", "image " + image + " is not present"
	}
	return im, ""
}

// imageMissingError says that image ("" = the default images) is not
// present, and how to build it.
func imageMissingError(image string) error {
	if image == "" {
		return errorf("PGQCHECK_PG=docker but neither %s is present and nothing is pulled; build one with: %s (or set PGQCHECK_IMAGE to a local image, or use PGQCHECK_PG=local)",
			strings.Join(DefaultImages, " nor "), BuildCommand(BuiltImage))
	}
	if cmd := BuildCommand(image); cmd != "" {
		return errorf("image %s is not present and nothing is pulled; build it with: %s (or use PGQCHECK_PG=local)", image, cmd)
	}
	return errorf("image %s is not present and nothing is pulled; load or build it first, e.g. %s builds %s (or use PGQCHECK_PG=local)", image, BuildCommand(BuiltImage), BuiltImage)
}

// startDocker runs image ("" = the first of DefaultImages present) through
// testcontainers' postgres module. It never pulls: a missing image is an
// error at once.
func startDocker(ctx context.Context, image string, o Options) (*Server, error) {
	p, err := dockerProvider(ctx)
	if err != nil {
		return nil, errorf("PGQCHECK_PG=docker but no Docker engine answers (%s); start Docker or use PGQCHECK_PG=local", rootCause(err))
	}
	defer p.Close()
	resolved, pgdata, err := resolveImage(ctx, p.Client(), image)
	if err != nil {
		return nil, err
	}
	if resolved == "" {
		return nil, imageMissingError(image)
	}
	image = resolved
	sweepStaleContainers(ctx, p.Client())
	if pgdata == "" {
		pgdata = "/var/lib/postgresql/data"
	}

	runCtx, cancel := context.WithTimeout(ctx, dockerReadyTimeout+30*time.Second)
	defer cancel()
	opts, err := containerOptions(o, pgdata)
	if err != nil {
		return nil, err
	}
	ctr, err := postgres.Run(runCtx, image, opts...)
	if err != nil {
		if ctr != nil {
			_ = terminate(ctr)
		}
		return nil, errorf("docker container from image %s did not start: %s", image, rootCause(err))
	}
	s, err := containerServer(ctx, ctr, image, o.Crash)
	if err != nil {
		_ = terminate(ctr)
		return nil, err
	}
	return s, nil
}

// containerOptions are the container's labels, server settings, readiness test and data
// directory (pgdata): in memory, or on the container's own layer for crash mode.
func containerOptions(o Options, pgdata string) ([]testcontainers.ContainerCustomizer, error) {
	host, _ := os.Hostname()
	opts := []testcontainers.ContainerCustomizer{
		testcontainers.WithLogger(quietLogger),
		testcontainers.WithLabels(map[string]string{
			LabelApp:  "1",
			LabelPID:  strconv.Itoa(os.Getpid()),
			LabelHost: host,
		}),
		// The module's command is "postgres -c fsync=off"; the settings the local backend
		// uses come after it, and a later -c wins.
		testcontainers.WithCmdArgs(append(settingArgs(o), "-c", "max_connections=200")...),
		// The module sets no wait strategy. The official image logs "ready
		// to accept connections" twice (its init server listens on the
		// socket only), an image from scripts/build-pg-image.sh once: a
		// session over the mapped port is the test that fits both.
		testcontainers.WithWaitStrategyAndDeadline(dockerReadyTimeout+5*time.Second, pgReady{timeout: dockerReadyTimeout}),
	}
	if o.Crash {
		// A crash stops the container and a restart starts it again: the cluster lives on the
		// container's own layer, which a restart keeps (a tmpfs would be empty again), and
		// the host port is chosen here, since a restarted container may be given another.
		port, err := freePort()
		if err != nil {
			return nil, errorf("docker: cannot find a free port for a crash-mode container: %v", err)
		}
		return append(opts, testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.PortBindings = network.PortMap{network.MustParsePort("5432/tcp"): {{HostPort: port}}}
		})), nil
	}
	// The cluster lives in memory: under the fuse-overlayfs storage driver
	// initdb on the container's own layer takes about three times as long
	// as on a tmpfs. The owner is the image's postgres user (uid 999 in
	// Debian-based images and ours; an entrypoint that starts as root, like
	// the official one's, chowns it anyway).
	return append(opts, testcontainers.WithTmpfs(map[string]string{pgdata: "rw,uid=999,gid=999,mode=0700"})), nil
}

// containerServer is the Server of a started container of image, which Close removes; durable
// says the container runs with durable settings, for crash mode.
func containerServer(ctx context.Context, ctr *postgres.PostgresContainer, image string, durable bool) (*Server, error) {
	h, err := ctr.Host(ctx)
	if err != nil {
		return nil, errorf("docker: cannot get the container host: %s", rootCause(err))
	}
	port, err := ctr.MappedPort(ctx, "5432/tcp")
	if err != nil {
		return nil, errorf("docker: cannot get the mapped port: %s", rootCause(err))
	}
	addr := net.JoinHostPort(h, port.Port())
	id := ctr.GetContainerID()
	short := id
	if len(short) > 12 {
		short = short[:12]
	}
	where := fmt.Sprintf("container %s (image %s) at %s", short, image, addr)
	dsnFor := func(db string) string {
		return fmt.Sprintf("postgres://postgres:postgres@%s/%s?sslmode=disable", addr, db)
	}
	s, err := newServer(ctx, BackendDocker, where, dsnFor, "postgres")
	if err != nil {
		return nil, err
	}
	s.docker = &dockerServer{ctr: ctr, id: id}
	s.durable = durable
	s.stop = func() error {
		if err := terminate(ctr); err != nil {
			return errorf("docker: cannot remove container %s: %s", short, rootCause(err))
		}
		return nil
	}
	return s, nil
}

func terminate(ctr testcontainers.Container) error {
	ctx, cancel := context.WithTimeout(context.Background(), dockerStopTimeout)
	defer cancel()
	return testcontainers.TerminateContainer(ctr, testcontainers.StopContext(ctx), testcontainers.StopTimeout(5*time.Second))
}

// sweepStaleContainers removes containers labelled by a process of this host
// that no longer exists (killed before it could clean up).
func sweepStaleContainers(ctx context.Context, c client.APIClient) {
	host, _ := os.Hostname()
	lctx, cancel := context.WithTimeout(ctx, dockerCheckTimeout)
	defer cancel()
	res, err := c.ContainerList(lctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", LabelApp+"=1"),
	})
	if err != nil {
		return
	}
	for _, ct := range res.Items {
		if ct.Labels[LabelHost] != host {
			continue
		}
		pid, err := strconv.Atoi(ct.Labels[LabelPID])
		if err != nil || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		_, _ = c.ContainerRemove(lctx, ct.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	}
}

// pgReady waits until a session over the mapped port answers SELECT 1,
// and fails at once if the container exits meanwhile.
type pgReady struct {
	timeout time.Duration
}

func (w pgReady) Timeout() *time.Duration { return &w.timeout }

func (w pgReady) String() string { return "a Postgres session on 5432/tcp" }

func (w pgReady) WaitUntilReady(ctx context.Context, t wait.StrategyTarget) error {
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	var last error
	for {
		if st, err := t.State(ctx); err == nil && !st.Running {
			return fmt.Errorf("container stopped (status %s, exit code %d) before Postgres was ready; container log: %s",
				st.Status, st.ExitCode, containerLogTail(t))
		}
		if h, err := t.Host(ctx); err != nil {
			last = err
		} else if port, err := t.MappedPort(ctx, "5432/tcp"); err != nil {
			last = err
		} else {
			dsn := fmt.Sprintf("postgres://postgres:postgres@%s/postgres?sslmode=disable&connect_timeout=2", net.JoinHostPort(h, port.Port()))
			actx, acancel := context.WithTimeout(ctx, 2*time.Second)
			conn, err := connect(actx, dsn)
			if err == nil {
				_, err = conn.Exec(actx, "SELECT 1")
				conn.Close(context.Background())
			}
			acancel()
			if err == nil {
				return nil
			}
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("Postgres did not answer within %s (last error: %s); container log: %s",
				w.timeout, rootCause(last), containerLogTail(t))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func containerLogTail(t wait.StrategyTarget) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rc, err := t.Logs(ctx)
	if err != nil {
		return "(no log: " + rootCause(err) + ")"
	}
	defer rc.Close()
	b, _ := io.ReadAll(io.LimitReader(rc, 1<<20))
	return tail(b, 6)
}

// freePort returns a TCP port that was free on the loopback a moment ago.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	return port, err
}

// crash kills the container with SIGKILL, as `docker kill -s KILL` does: its first process
// and, with it, the postmaster and every backend. (Killing the postmaster from inside is not
// always possible: in the official image the postmaster is the container's first process,
// which no signal sent from inside its namespace can kill.) It returns once the container has
// stopped.
func (d *dockerServer) crash(ctx context.Context) error {
	p, err := dockerProvider(ctx)
	if err != nil {
		return errorf("docker: crash %.12s: no engine answers (%s)", d.id, rootCause(err))
	}
	defer p.Close()
	kctx, cancel := context.WithTimeout(ctx, crashExitTimeout)
	defer cancel()
	if _, err := p.Client().ContainerKill(kctx, d.id, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		return errorf("docker: cannot kill container %.12s: %s", d.id, rootCause(err))
	}
	for {
		st, err := d.ctr.State(kctx)
		if err == nil && !st.Running {
			return nil
		}
		select {
		case <-kctx.Done():
			return errorf("docker: container %.12s still runs %s after SIGKILL", d.id, crashExitTimeout)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// restart starts the stopped container again; its entrypoint finds the cluster initialised and
// starts the server, which runs crash recovery. It returns once a session over the same host
// port answers (the container's wait strategy).
func (d *dockerServer) restart(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, dockerReadyTimeout+10*time.Second)
	defer cancel()
	if st, err := d.ctr.State(rctx); err == nil && st.Running {
		return errorf("docker: restart, but container %.12s is running; Crash it first", d.id)
	}
	if err := d.ctr.Start(rctx); err != nil {
		return errorf("docker: cannot restart container %.12s: %s", d.id, rootCause(err))
	}
	return nil
}
