package pgserver

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// crashBackends are the backends a crash test runs on here: local when the binaries are
// found, and docker when PGQCHECK_PG=docker.
func crashBackends(t *testing.T) []Options {
	var out []Options
	if _, why := findBinaries(); why == "" {
		out = append(out, Options{Kind: "local", Crash: true, Log: io.Discard})
	}
	if o := OptionsFromEnv(); o.Kind == "docker" {
		o.Crash, o.Log = true, io.Discard
		out = append(out, o)
	}
	if len(out) == 0 {
		t.Skip("no PostgreSQL server binaries here and PGQCHECK_PG is not docker: nothing to crash")
	}
	return out
}

// TestCrashRestart kills a crash-mode server with SIGKILL and restarts it, twice: what
// committed is there after the restart, the transaction open at the crash is not, the settings
// are the durable ones, the address is the same; and Close of a crashed server leaves nothing
// behind.
func TestCrashRestart(t *testing.T) {
	t.Parallel()
	for _, o := range crashBackends(t) {
		t.Run(o.Kind, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			s, err := Start(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if why := s.CrashUnsupported(); why != "" {
				t.Fatalf("a crash-mode server says it cannot crash: %s", why)
			}
			d, err := s.CreateDatabase(ctx, "pgqcheck_crash")
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"fsync", "synchronous_commit", "full_page_writes"} {
				if got := queryString(t, d.DSN, "SELECT current_setting($1)", name); got != "on" {
					t.Errorf("%s = %s in crash mode, want on", name, got)
				}
			}
			conn, err := pgx.Connect(ctx, d.DSN)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			for _, q := range []string{"CREATE TABLE t (v int)", "INSERT INTO t VALUES (1)", "BEGIN", "INSERT INTO t VALUES (2)"} {
				if _, err := conn.Exec(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			begin := time.Now()
			if err := s.Crash(ctx); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s crash: %s", o.Kind, time.Since(begin).Round(time.Millisecond))
			if err := s.Crash(ctx); err == nil {
				t.Errorf("a second Crash of a crashed server succeeded")
			}
			if _, err := conn.Exec(ctx, "COMMIT"); err == nil {
				t.Fatalf("COMMIT on a session of the crashed server succeeded")
			}
			if left := processesIn(s.DataDir()); s.local != nil && len(left) > 0 {
				t.Errorf("processes %v of the crashed server still run in %s", left, s.DataDir())
			}
			begin = time.Now()
			if err := s.Restart(ctx); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s restart (crash recovery included): %s", o.Kind, time.Since(begin).Round(time.Millisecond))
			if err := s.Restart(ctx); err == nil {
				t.Errorf("Restart of a running server succeeded")
			}
			if got := queryString(t, d.DSN, "SELECT string_agg(v::text, ',' ORDER BY v) FROM t"); got != "1" {
				t.Errorf("after the restart t holds %q; want the committed row only (1)", got)
			}
			// A second round: the restarted server crashes and restarts like the first.
			if err := s.Crash(ctx); err != nil {
				t.Fatal(err)
			}
			if err := s.Restart(ctx); err != nil {
				t.Fatal(err)
			}
			if got := queryString(t, d.DSN, "SELECT count(*)::text FROM t"); got != "1" {
				t.Errorf("after the second restart t holds %s rows, want 1", got)
			}

			// A third crash, never restarted: Close removes what the crashed server left.
			if err := s.Crash(ctx); err != nil {
				t.Fatal(err)
			}
			dir, id := s.Dir(), s.ContainerID()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			assertNothingLeft(t, dir, id)
			if err := s.Restart(ctx); err == nil {
				t.Errorf("Restart after Close succeeded")
			}
		})
	}
}

func TestCrashRefused(t *testing.T) {
	checkOneLineError(t, checkSettings([]string{"fsync"}), `server setting "fsync" is not name=value`)
	_, err := Start(context.Background(), Options{Kind: "dsn", DSN: "postgres://nobody@127.0.0.1:1/x", Crash: true, Log: io.Discard})
	checkOneLineError(t, err, "PGQCHECK_PG=dsn names one this suite does not own")
	s := &Server{Backend: BackendDSN, Where: "somewhere (dsn)"}
	checkOneLineError(t, s.Crash(context.Background()), "cannot crash somewhere (dsn): a crash test kills -9")
	s = &Server{Backend: BackendLocal, Where: "a cluster"}
	checkOneLineError(t, s.Restart(context.Background()), "started without Options.Crash")
}

// assertNothingLeft fails when a local cluster's directory or processes, or a container,
// outlive Close.
func assertNothingLeft(t *testing.T, dir, containerID string) {
	t.Helper()
	if dir != "" {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("cluster directory %s still there after Close (%v)", dir, err)
		}
		if pids := ProcessesUsing(dir); len(pids) > 0 {
			t.Errorf("processes %v still use %s after Close", pids, dir)
		}
	}
	if containerID != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, c := range ownContainers(t, ctx) {
			if c.ID == containerID {
				t.Errorf("container %.12s (%s) still there after Close", c.ID, c.State)
			}
		}
	}
}
