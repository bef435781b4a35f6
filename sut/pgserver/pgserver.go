// Package pgserver provides the PostgreSQL server that pgqcheck runs against.
//
// One harness, three backends, chosen by PGQCHECK_PG (see Options):
//
//   - dsn: an existing server named by PGQCHECK_DSN. Only databases created
//     through CreateDatabase are touched, and they are dropped in Close.
//   - docker: a container started by testcontainers-go from PGQCHECK_IMAGE,
//     by default postgres:18.6, else pgqcheck/postgres:18.6 (see
//     DefaultImages). The image must already be present; nothing is pulled.
//   - local: an ephemeral cluster (initdb + postgres in a temp dir, unix
//     socket only, fsync off) from the PostgreSQL binaries on the machine.
//
// A server started with Options.Crash (local or docker) can be killed with SIGKILL and
// restarted on the same data directory: Server.Crash, Server.Restart (see crash.go).
//
// "auto" (the default) picks dsn if PGQCHECK_DSN is set, else docker if an
// engine answers and the image is present, else local if binaries are found.
//
// Every error returned by this package is a single line starting with
// "pgqcheck: ".
package pgserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgqcheck/pgqcheck/internal/textfmt"
)

// Backend names the way a Server was obtained.
type Backend string

// The three backends.
const (
	BackendDSN    Backend = "dsn"
	BackendDocker Backend = "docker"
	BackendLocal  Backend = "local"
)

// DefaultImage is the official image of the seed's PostgreSQL version, the
// docker backend's first choice when PGQCHECK_IMAGE is not set.
const DefaultImage = "postgres:18.6"

// BuiltImage is the image scripts/build-pg-image.sh builds for the seed's
// version from Debian's archive, the second choice.
const BuiltImage = "pgqcheck/postgres:18.6"

// DefaultImages are the images the docker backend looks for, in order, when
// PGQCHECK_IMAGE is not set; the first one present locally is used. A
// variable so that tests can make the lookup find nothing.
var DefaultImages = []string{DefaultImage, BuiltImage}

// BuildCommand returns the command that builds image, for images
// scripts/build-pg-image.sh knows how to build ("" for any other).
func BuildCommand(image string) string {
	switch image {
	case DefaultImage, BuiltImage:
		return "bash scripts/build-pg-image.sh --from-debian 18.6"
	case "pgqcheck/postgres:17":
		return "bash scripts/build-pg-image.sh --from-debian 17"
	case "pgqcheck/postgres:15":
		return "bash scripts/build-pg-image.sh"
	}
	return ""
}

// Environment variables read by OptionsFromEnv.
const (
	EnvPG    = "PGQCHECK_PG"
	EnvDSN   = "PGQCHECK_DSN"
	EnvImage = "PGQCHECK_IMAGE"
)

// Options selects and configures a backend.
type Options struct {
	Kind  string    // "auto" (default when ""), "dsn", "docker", "local"; from PGQCHECK_PG
	DSN   string    // PGQCHECK_DSN
	Image string    // PGQCHECK_IMAGE; "" = the first of DefaultImages present
	Log   io.Writer // where the one-line banner goes; nil = os.Stderr
	// Crash starts a server that may be crashed and restarted (Server.Crash): durable
	// (fsync, synchronous_commit and full_page_writes on) and, for docker, with its data
	// directory where a restart finds it. The dsn backend refuses it.
	Crash bool
	// Settings are extra server settings, "name=value", applied after every other one (local
	// and docker backends): a test can weaken durability on purpose with them.
	Settings []string
}

// OptionsFromEnv reads PGQCHECK_PG, PGQCHECK_DSN and PGQCHECK_IMAGE.
func OptionsFromEnv() Options {
	return Options{
		Kind:  strings.TrimSpace(os.Getenv(EnvPG)),
		DSN:   strings.TrimSpace(os.Getenv(EnvDSN)),
		Image: strings.TrimSpace(os.Getenv(EnvImage)),
	}
}

// Server is a running PostgreSQL server obtained from one of the backends.
type Server struct {
	Backend     Backend
	Version     string // SHOW server_version
	Where       string // human description of where the server is
	StartupTime time.Duration

	versionNum int // SHOW server_version_num

	// dsnFor returns a connect string for the named database on this server.
	dsnFor func(db string) string
	// stop releases what the backend created (nil for dsn).
	stop func() error

	local   *localCluster
	docker  *dockerServer
	durable bool // started with Options.Crash

	mu       sync.Mutex
	dbs      map[string]*Database // created and not yet dropped
	closed   bool
	closeErr error
	closing  chan struct{} // closed when Close has finished
}

// Database is a database created on a Server by CreateDatabase.
type Database struct {
	Name string
	DSN  string // connect string usable by pgx.Connect

	srv     *Server
	mu      sync.Mutex
	dropped bool
}

// pgError is the error type of this package: a single-line message that
// still unwraps to its cause.
type pgError struct {
	msg   string
	cause error
}

func (e *pgError) Error() string { return e.msg }
func (e *pgError) Unwrap() error { return e.cause }

// errorf builds a one-line error starting with "pgqcheck: ". If one of the
// arguments is an error, it becomes the cause for errors.Is/As.
func errorf(format string, args ...any) error {
	var cause error
	for _, a := range args {
		if e, ok := a.(error); ok && cause == nil {
			cause = e
		}
	}
	return &pgError{msg: "pgqcheck: " + textfmt.OneLine(fmt.Sprintf(format, args...)), cause: cause}
}

// Start obtains a server as Options say, prints its banner and returns it.
// The caller must Close it.
func Start(ctx context.Context, o Options) (*Server, error) {
	kind := strings.ToLower(strings.TrimSpace(o.Kind))
	var (
		s   *Server
		err error
	)
	begin := time.Now()
	if err := checkSettings(o.Settings); err != nil {
		return nil, err
	}
	switch kind {
	case "", "auto":
		s, err = startAuto(ctx, o)
	case "dsn":
		if o.DSN == "" {
			return nil, errorf("PGQCHECK_PG=dsn but PGQCHECK_DSN is empty; set PGQCHECK_DSN=postgres://user:password@host:port/db")
		}
		if o.Crash {
			return nil, errCrashDSN
		}
		s, err = startDSN(ctx, o.DSN)
	case "docker":
		s, err = startDocker(ctx, o.Image, o)
	case "local":
		s, err = startLocal(ctx, o)
	default:
		return nil, errorf("unknown PGQCHECK_PG=%q; use auto, dsn, docker or local", o.Kind)
	}
	if err != nil {
		return nil, err
	}
	s.StartupTime = time.Since(begin)
	w := o.Log
	if w == nil {
		w = os.Stderr
	}
	fmt.Fprintln(w, s.Banner())
	return s, nil
}

// startAuto picks dsn, docker or local, in that order.
func startAuto(ctx context.Context, o Options) (*Server, error) {
	if o.DSN != "" {
		if o.Crash {
			return nil, errCrashDSN
		}
		return startDSN(ctx, o.DSN)
	}
	image, dockerWhy := dockerUsable(ctx, o.Image)
	if dockerWhy == "" {
		return startDocker(ctx, image, o)
	}
	bins, localWhy := findBinaries()
	if localWhy == "" {
		return startLocalWith(ctx, bins, o)
	}
	return nil, errorf("no Postgres available: set PGQCHECK_DSN=postgres://... (dsn), "+
		"build an image with "+BuildCommand(BuiltImage)+" (docker), "+
		"or install PostgreSQL server binaries (local) [docker: %s; local: %s]", dockerWhy, localWhy)
}

// newServer fills the fields shared by all backends and reads the version
// through a connection to adminDB.
func newServer(ctx context.Context, b Backend, where string, dsnFor func(string) string, adminDB string) (*Server, error) {
	s := makeServer(b, where, dsnFor)
	conn, err := connect(ctx, dsnFor(adminDB))
	if err != nil {
		return nil, errorf("cannot connect to %s: %s", where, rootCause(err))
	}
	defer conn.Close(context.Background())
	if err := s.readVersion(ctx, conn); err != nil {
		return nil, err
	}
	return s, nil
}

func makeServer(b Backend, where string, dsnFor func(string) string) *Server {
	return &Server{
		Backend: b,
		Where:   where,
		dsnFor:  dsnFor,
		dbs:     map[string]*Database{},
		closing: make(chan struct{}),
	}
}

func (s *Server) readVersion(ctx context.Context, conn *pgx.Conn) error {
	var num string
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version'), current_setting('server_version_num')").Scan(&s.Version, &num); err != nil {
		return errorf("cannot read the server version from %s: %s", s.Where, rootCause(err))
	}
	fmt.Sscan(num, &s.versionNum)
	return nil
}

// connect opens one connection, bounded in time even if ctx is not.
func connect(ctx context.Context, dsn string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	if cfg.ConnectTimeout == 0 || cfg.ConnectTimeout > 10*time.Second {
		cfg.ConnectTimeout = 10 * time.Second
	}
	return pgx.ConnectConfig(ctx, cfg)
}

// Banner is the one-line description printed by Start.
func (s *Server) Banner() string {
	ver := s.Version
	if f := strings.Fields(ver); len(f) > 0 {
		ver = f[0]
	}
	return fmt.Sprintf("pgqcheck: backend=%s server=PostgreSQL %s startup=%s where=%s",
		s.Backend, ver, s.StartupTime.Round(time.Millisecond), s.Where)
}

// CreateDatabase creates a uniquely named database (prefix + "_" + random
// suffix) on this server. It is dropped by Drop or, at the latest, by Close.
func (s *Server) CreateDatabase(ctx context.Context, prefix string) (*Database, error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, errorf("CreateDatabase on a closed server (%s)", s.Where)
	}
	name := databaseName(prefix)
	conn, err := connect(ctx, s.dsnFor(s.adminDB()))
	if err != nil {
		return nil, errorf("cannot connect to %s to create a database: %s", s.Where, rootCause(err))
	}
	defer conn.Close(context.Background())
	// template0: nothing a user added to template1 leaks in, and nobody can
	// be connected to it, which would make CREATE DATABASE fail.
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE template0"); err != nil {
		return nil, errorf("cannot create database %s on %s: %s", name, s.Where, rootCause(err))
	}
	d := &Database{Name: name, DSN: s.dsnFor(name), srv: s}
	s.mu.Lock()
	s.dbs[name] = d
	closed = s.closed
	s.mu.Unlock()
	if closed {
		// Close ran meanwhile and did not see this database.
		_ = d.Drop(context.Background())
		return nil, errorf("CreateDatabase on a closed server (%s)", s.Where)
	}
	return d, nil
}

// adminDB is the database used for CREATE/DROP DATABASE.
func (s *Server) adminDB() string {
	if s.Backend == BackendDSN {
		return "" // the database named in the DSN
	}
	return "postgres"
}

// databaseName makes prefix a valid lower-case identifier and appends a
// random suffix.
func databaseName(prefix string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(prefix) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	p := strings.Trim(b.String(), "_")
	if p == "" {
		p = "pgqcheck"
	}
	if p[0] >= '0' && p[0] <= '9' {
		p = "d" + p
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	suffix := hex.EncodeToString(rnd[:])
	if max := 63 - 1 - len(suffix); len(p) > max {
		p = p[:max]
	}
	return p + "_" + suffix
}

// Drop drops the database (terminating its sessions). It is idempotent.
func (d *Database) Drop(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dropped {
		return nil
	}
	s := d.srv
	if err := s.dropDatabase(ctx, d.Name); err != nil {
		return err
	}
	d.dropped = true
	s.mu.Lock()
	delete(s.dbs, d.Name)
	s.mu.Unlock()
	return nil
}

func (s *Server) dropDatabase(ctx context.Context, name string) error {
	conn, err := connect(ctx, s.dsnFor(s.adminDB()))
	if err != nil {
		return errorf("cannot connect to %s to drop database %s: %s", s.Where, name, rootCause(err))
	}
	defer conn.Close(context.Background())
	ident := pgx.Identifier{name}.Sanitize()
	if s.versionNum >= 130000 {
		_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)")
	} else {
		_, err = conn.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", name)
		if err == nil {
			_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident)
		}
	}
	if err != nil {
		return errorf("cannot drop database %s on %s: %s", name, s.Where, rootCause(err))
	}
	return nil
}

// Close drops the databases not yet dropped (dsn backend) and stops and
// removes everything Start created (container, cluster directory,
// processes). It is idempotent and safe to call from several goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.closing
		return s.closeErr
	}
	s.closed = true
	var dbs []*Database
	for _, d := range s.dbs {
		dbs = append(dbs, d)
	}
	s.mu.Unlock()
	unregisterInterrupt(s)

	var errs []error
	if s.Backend == BackendDSN {
		// Only the dsn backend outlives us: leave nothing on it. The others
		// are destroyed whole below, which is faster than dropping.
		sort.Slice(dbs, func(i, j int) bool { return dbs[i].Name < dbs[j].Name })
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		for _, d := range dbs {
			if err := d.Drop(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		cancel()
	}
	if s.stop != nil {
		if err := s.stop(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = strings.TrimPrefix(e.Error(), "pgqcheck: ")
		}
		s.closeErr = &pgError{msg: "pgqcheck: " + strings.Join(msgs, "; "), cause: errors.Join(errs...)}
	}
	close(s.closing)
	return s.closeErr
}

// rootCause returns a short text for the innermost cause of err.
func rootCause(err error) string {
	if err == nil {
		return ""
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	if errors.Is(err, context.Canceled) {
		return "canceled"
	}
	for {
		var next error
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			next = u.Unwrap()
		case interface{ Unwrap() []error }:
			if l := u.Unwrap(); len(l) > 0 {
				next = l[0]
			}
		}
		if next == nil {
			return textfmt.OneLine(err.Error())
		}
		err = next
	}
}
