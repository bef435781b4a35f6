// Package suttest gives tests a queue installed in a database of its own on the shared server,
// dropped when the test ends.
package suttest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pgqcheck/pgqcheck/internal/modroot"
	"github.com/pgqcheck/pgqcheck/internal/mutant"
	"github.com/pgqcheck/pgqcheck/sut"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

// Install creates a database on the process's shared server, installs q in it and registers
// its removal. The server is the one PGQCHECK_PG selects; an unavailable one fails the test
// with the harness's one-line explanation.
func Install(tb testing.TB, q *sut.Queue) *sut.Installed {
	tb.Helper()
	srv, err := pgserver.Shared(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return InstallOn(tb, srv, q)
}

// InstallOn is Install on the server srv.
func InstallOn(tb testing.TB, srv *pgserver.Server, q *sut.Queue) *sut.Installed {
	tb.Helper()
	in, db := installOn(tb, srv, "pgqcheck_", q)
	tb.Cleanup(func() {
		in.Close()
		if err := db.Drop(context.Background()); err != nil {
			tb.Errorf("dropping %s: %v", db.Name, err)
		}
	})
	return in
}

// InstallForProcess is Install for what outlives one test (a fuzzing process's queue): the
// database stays until the shared server closes, which drops it (pgserver.Main).
func InstallForProcess(tb testing.TB, prefix string, q *sut.Queue) *sut.Installed {
	tb.Helper()
	in, _ := install(tb, prefix, q)
	return in
}

func install(tb testing.TB, prefix string, q *sut.Queue) (*sut.Installed, *pgserver.Database) {
	tb.Helper()
	srv, err := pgserver.Shared(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return installOn(tb, srv, prefix, q)
}

func installOn(tb testing.TB, srv *pgserver.Server, prefix string, q *sut.Queue) (*sut.Installed, *pgserver.Database) {
	tb.Helper()
	ctx := context.Background()
	db, err := srv.CreateDatabase(ctx, prefix+q.Name)
	if err != nil {
		tb.Fatal(err)
	}
	in, err := sut.Install(ctx, db.DSN, q)
	if err != nil {
		_ = db.Drop(ctx)
		tb.Fatal(err)
	}
	return in, db
}

// Queues returns the queues a suite judges (sut.Under), failing the test on a bad folder.
// Without PGQCHECK_SQL_DIR they are the built-ins and the correct variants of other shapes in
// testdata/queues.
func Queues(tb testing.TB) []*sut.Queue {
	tb.Helper()
	qs, err := sut.Under()
	if err != nil {
		tb.Fatal(err)
	}
	if os.Getenv(sut.EnvSQLDir) != "" {
		return qs
	}
	vs, err := sut.Variants(ModuleDir(tb, ""))
	if err != nil {
		tb.Fatal(err)
	}
	return append(append(qs, vs...), sut.GoQueues()...)
}

// ModuleDir is rel inside the pgqcheck module that holds the test's working directory.
func ModuleDir(tb testing.TB, rel string) string {
	tb.Helper()
	root, ok := modroot.Here()
	if !ok {
		tb.Fatal("pgqcheck: not inside the pgqcheck module")
	}
	return filepath.Join(root, rel)
}

// Mutant is the mutant of the module's testdata/mutants named name. Loading the mutants needs
// the Go queues registered (a blank import of github.com/pgqcheck/pgqcheck/internal/goqueues).
func Mutant(tb testing.TB, name string) *mutant.Mutant {
	tb.Helper()
	ms, err := mutant.Load(ModuleDir(tb, filepath.Join("testdata", "mutants")))
	if err != nil {
		tb.Fatal(err)
	}
	for _, m := range ms {
		if m.Name == name {
			return m
		}
	}
	tb.Fatalf("no mutant %s in testdata/mutants", name)
	return nil
}

// SelfCheck skips a test of the suite's own power (its mutants caught, its corpus catching
// them) when PGQCHECK_SQL_DIR names a queue: such a run is a verdict on that queue, which these
// tests do not judge, and they would be most of its cost. pkg is the test's package, for the
// line that says how to run it.
func SelfCheck(tb testing.TB, pkg string) {
	tb.Helper()
	if dir := os.Getenv(sut.EnvSQLDir); dir != "" {
		tb.Skipf("self-check of the suite on its own mutants, not part of the verdict on %s; run it without %s: go test -run '^%s$' %s", dir, sut.EnvSQLDir, tb.Name(), pkg)
	}
}
