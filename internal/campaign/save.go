package campaign

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/pgqcheck/pgqcheck/fuzz"
	"github.com/pgqcheck/pgqcheck/internal/corpus"
	"github.com/pgqcheck/pgqcheck/internal/hunt"
	"github.com/pgqcheck/pgqcheck/internal/linear/schedule"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/verdict"
	"github.com/pgqcheck/pgqcheck/sut"
)

// Where cases are kept, relative to the module root: saved programs (where TestPropPrograms
// replays them) and FuzzScheduled's corpus.
var (
	foundDir         = filepath.Join(corpus.Dir, "found")
	fuzzScheduledDir = filepath.Join("fuzz", fuzz.ScheduledCorpusDir)
)

// Saver puts replayable cases where plain `go test` (and `pgqcheck replay`) finds them. A case
// stands alone: a sequential finding is its reduced program as an .ops file, a scheduled one
// its choices as a FuzzScheduled input, a stress one the failing job's history. None depends on
// a test's name or on rapid's fail files.
type Saver struct {
	// Root is the module root under whose testdata/ cases are kept; "" keeps nothing (the
	// mutant table, whose failures are the expected outcome).
	Root string
	// Reports is where concurrent failures' report folders go: the campaign's report folder,
	// or a temporary one the campaign removes.
	Reports string
}

func (s *Saver) keeps() bool { return s.Root != "" }

// savedPrograms lists the .ops programs kept under Root, oldest name first.
func (s *Saver) savedPrograms() []string {
	if !s.keeps() {
		return nil
	}
	files, _ := filepath.Glob(filepath.Join(s.Root, foundDir, "*.ops"))
	sort.Strings(files)
	return files
}

// keepProgram saves a finding's program under testdata/programs/found, where TestPropPrograms
// replays it on every `go test`, and a campaign's start replays it on the queue it judges. The
// header's mode says which engine replays it.
func (s *Saver) keepProgram(fl *Failure, f *verdict.Finding, q *sut.Queue) error {
	if !s.keeps() || f.Program == nil {
		return nil
	}
	path, _, err := corpus.Save(s.Root, f, "pgqcheck run")
	if err != nil {
		return fmt.Errorf("saving the reduced program: %v", PathCause(err))
	}
	s.pointToProgram(fl, path, q)
	return nil
}

// pointToProgram fills in how a saved program replays.
func (s *Saver) pointToProgram(fl *Failure, path string, q *sut.Queue) {
	fl.ProgramFile = path
	// TestPropPrograms replays the whole corpus against the queue it judges.
	fl.ProgramCommand = s.goTest("^TestPropPrograms$", q, ".")
	fl.ReplayCommand = ReplayCommand(s.Root, path, q)
}

// keepFuzzInput saves a scheduled failure's choices as a FuzzScheduled corpus entry, which
// `go test ./fuzz` replays: the same run, without rapid.
func (s *Saver) keepFuzzInput(fl *Failure, data []byte, q *sut.Queue) error {
	if !s.keeps() {
		return nil
	}
	if len(data) == 0 {
		return nil
	}
	dir := filepath.Join(s.Root, fuzzScheduledDir)
	sum := sha256.Sum256(data)
	name := "found-" + program.SafeName(q.Name) + "-" + hex.EncodeToString(sum[:6])
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("saving the fuzz input: %v", PathCause(err))
	}
	if err := os.WriteFile(path, schedule.CorpusFile(data), 0o644); err != nil {
		return fmt.Errorf("saving the fuzz input: %v", PathCause(err))
	}
	fl.FuzzFile = path
	fl.FuzzCommand = s.goTest("^FuzzScheduled$/^"+regexp.QuoteMeta(name)+"$", q, "./fuzz")
	fl.ReplayCommand = ReplayCommand(s.Root, path, q)
	return nil
}

// keepHistory saves a stress failure's history under testdata/histories, marked with the
// property it breaks, where TestLinearHistories re-checks it on every `go test`.
func (s *Saver) keepHistory(fl *Failure, f *verdict.Finding, q *sut.Queue) error {
	if !s.keeps() || f.ReportDir == "" {
		return nil
	}
	name := "found-" + program.SafeName(q.Name) + "-stress-" + time.Now().UTC().Format("20060102T150405")
	dst := filepath.Join(s.Root, "testdata", "histories", name+".json")
	if err := hunt.SaveFailingHistory(f.ReportDir, dst, f.Property()); err != nil {
		return fmt.Errorf("saving the history as %s: %v", dst, PathCause(err))
	}
	fl.ReplayFile = dst
	fl.ReplayCommand = "cd " + shellQuote(s.Root) + " && go test -count=1 -run '^TestLinearHistories$/^" + regexp.QuoteMeta(name) + "$' .   (timeline: pgqcheck check-history " + shellQuote(dst) + " -html t.html)"
	return nil
}

// goTest is a `go test` line run from the module root against q (a folder queue is passed in
// PGQCHECK_SQL_DIR: the replay must judge the same queue).
func (s *Saver) goTest(run string, q *sut.Queue, pkg string) string {
	cmd := "cd " + shellQuote(s.Root) + " && "
	if dir := q.Dir(); dir != "" {
		cmd += sut.EnvSQLDir + "=" + shellQuote(dir) + " "
	}
	return cmd + "go test -count=1 -run " + shellQuote(run) + " " + pkg
}

// ReplayCommand is the `pgqcheck replay` line that judges q with a saved case.
func ReplayCommand(root, file string, q *sut.Queue) string {
	cmd := "cd " + shellQuote(root) + " && go run ./cmd/pgqcheck replay " + shellQuote(file)
	switch {
	case q.Dir() != "":
		cmd += " --sql-dir " + shellQuote(q.Dir())
	case q.Name != sut.DefaultQueue:
		cmd += " --queue " + shellQuote(q.Name)
	}
	return cmd
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == '=' || r == ':' ||
			(r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9'))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// PathCause is a file-system error without the path and operation (the message names them).
func PathCause(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
