package pgqcheck

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/corpus"
	"github.com/pgqcheck/pgqcheck/internal/suite"
	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/internal/testflags"
	"github.com/pgqcheck/pgqcheck/sut"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

// A Queue is a queue to judge: a folder of SQL files (SQLDir) or a queue written in Go
// (GoQueue).
type Queue struct {
	q   *sut.Queue
	err error
}

// SQLDir is the queue whose SQL files are in dir (relative to the test's package folder):
// schema.sql, enqueue.sql, claim.sql, complete.sql, expire.sql and snapshot.sql, and optionally
// the lifecycle's files and a queue.json that declares how the queue differs from the seed's
// shape. The folder is checked against the contract before anything runs.
func SQLDir(dir string) Queue {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return Queue{err: fmt.Errorf("pgqcheck: queue folder %s is not a folder here; pgqcheck.SQLDir takes the folder, relative to the test's package, that holds schema.sql, enqueue.sql, claim.sql, complete.sql, expire.sql and snapshot.sql", dir)}
	}
	q, err := sut.LoadDir(dir)
	return Queue{q: q, err: err}
}

// GoQueue is a queue written in Go, named name: newQueue makes its state for one database
// (Judge installs the queue in several, side by side), declared says how it differs from the
// seed's shape, as a folder's queue.json does. What else it can do is read from the
// interfaces its value implements (sut.GoLocker, sut.GoFailer, sut.GoRenewer and the rest).
func GoQueue(name string, declared sut.Declared, newQueue func() sut.GoQueue) Queue {
	switch {
	case name == "":
		return Queue{err: errors.New("pgqcheck: a Go queue needs a name; pass one to pgqcheck.GoQueue")}
	case newQueue == nil:
		return Queue{err: fmt.Errorf("pgqcheck: Go queue %s has no constructor; pass a func() sut.GoQueue to pgqcheck.GoQueue", name)}
	}
	return Queue{q: sut.GoDef{Name: name, Declared: declared, New: newQueue}.Queue()}
}

// Err is the queue's one-line contract error (a missing file, a statement that does not
// prepare, a bad queue.json), nil for a queue that can be judged.
func (q Queue) Err() error { return q.err }

// Name is the queue's name: its folder's name, or a Go queue's.
func (q Queue) Name() string {
	if q.q == nil {
		return ""
	}
	return q.q.Name
}

// Judge judges q in subtests of t: the saved programs of the corpus folder first (each must
// still hold), then each mode, and prints the verdict, one line per property. A broken
// promise fails t with the property, the shortest program that still breaks it and where
// that program was saved (the corpus folder, default testdata/pgqcheck), from which the
// next go test replays it.
func Judge(t *testing.T, q Queue, opts ...Option) {
	t.Helper()
	if q.err != nil {
		t.Fatal(q.err)
	}
	if q.q == nil {
		t.Fatal("pgqcheck: no queue to judge; pass pgqcheck.SQLDir(dir) or pgqcheck.GoQueue(...)")
	}
	s, err := settingsOf(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv, release, err := s.server(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	cfg := s.config(srv)
	begin := time.Now()
	cases, err := corpus.LoadFolder(s.corpus)
	if err != nil {
		t.Fatal(err)
	}
	// A saved case that fails again is the verdict: the queue still has that bug, and a search
	// would only find it once more.
	if len(cases) > 0 && !t.Run("corpus", func(t *testing.T) { suite.Programs(t, q.q, cfg, cases) }) {
		report(t, cfg, begin)
		return
	}
	for round := 0; round == 0 || time.Since(begin) < s.budget && !t.Failed(); round++ {
		name := "round-" + fmt.Sprint(round+1)
		cfg.Seed = s.seed
		if s.seed != 0 {
			cfg.Seed = s.seed + uint64(round)
		}
		t.Run(name, func(t *testing.T) { s.round(t, q.q, cfg) })
	}
	report(t, cfg, begin)
}

// report prints the verdict, one line per property judged.
func report(t *testing.T, cfg suite.Config, begin time.Time) {
	var out strings.Builder
	cfg.Board.Print(&out)
	t.Logf("judged in %v%s", time.Since(begin).Round(time.Millisecond), out.String())
}

// round runs each chosen mode once: the searches side by side (each in a database of its
// own, each mostly waiting on the queue), then stress, which keeps the cores busy, alone.
func (s settings) round(t *testing.T, q *sut.Queue, cfg suite.Config) {
	t.Run("search", func(t *testing.T) {
		for _, m := range s.modes {
			if m == Stress {
				continue
			}
			t.Run(string(m), func(t *testing.T) {
				t.Parallel()
				switch m {
				case Sequential:
					suite.Sequential(t, q, cfg, false)
				case LeaseTime:
					suite.Sequential(t, q, cfg, true)
				case Scheduled:
					suite.Scheduled(t, q, cfg)
				}
			})
		}
	})
	if s.has(Stress) && !t.Failed() {
		t.Run(string(Stress), func(t *testing.T) { suite.Stress(t, q, cfg) })
	}
}

func (s settings) config(srv *pgserver.Server) suite.Config {
	c := suite.Config{
		Install: func(tb testing.TB, q *sut.Queue) *sut.Installed { return suttest.InstallOn(tb, srv, q) },
		Corpus:  s.corpus,
		Replay:  "the next go test of this package",
		Checks:  s.checks,
		Board:   suite.NewBoard(),
		// Judging one queue, the output leads with the reduced programs of the other modes.
		BriefStress: true,
	}
	// rapid may spend 30 s shrinking one failure; the reducer finishes the job in well under
	// a second, so rapid gets 10 s unless the command line chose otherwise.
	if !testflags.Given("rapid.shrinktime") {
		c.ShrinkTime = 10 * time.Second
	}
	return c
}

// The servers Judge started from the environment, shared by the calls that run at once and
// closed when the last one ends, unless Main keeps them for the whole test binary.
var servers struct {
	mu    sync.Mutex
	users int
	kept  bool // Main holds the shared server until the binary ends
}

// server is the Postgres the judgement runs on, and what to do when it ends.
func (s settings) server(ctx context.Context) (*pgserver.Server, func(), error) {
	if s.dsn != "" {
		srv, err := pgserver.Start(ctx, pgserver.Options{Kind: string(pgserver.BackendDSN), DSN: s.dsn})
		if err != nil {
			return nil, nil, err
		}
		return srv, func() { _ = srv.Close() }, nil
	}
	servers.mu.Lock()
	defer servers.mu.Unlock()
	srv, err := pgserver.Shared(ctx)
	if err != nil {
		return nil, nil, err
	}
	servers.users++
	return srv, func() {
		servers.mu.Lock()
		defer servers.mu.Unlock()
		servers.users--
		if servers.users == 0 && !servers.kept {
			_ = pgserver.CloseShared()
		}
	}, nil
}

// Main runs a test binary's tests with one Postgres server for every Judge in it, closed
// once they have all run, and returns the exit code. Without it each Judge that finds no
// other running starts a server of its own (a second or two). Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgqcheck.Main(m)) }
func Main(m *testing.M) int {
	servers.mu.Lock()
	servers.kept = true
	servers.mu.Unlock()
	return pgserver.Main(m)
}

// defaultCorpus is where a judgement keeps its cases when no Corpus option names a folder:
// the calling package's testdata/pgqcheck.
var defaultCorpus = filepath.Join("testdata", "pgqcheck")
