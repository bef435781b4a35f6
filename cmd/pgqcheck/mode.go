package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"pgqcheck/fuzz"
	"pgqcheck/linear"
	"pgqcheck/model"
	"pgqcheck/program"
	"pgqcheck/sut"
)

// Mode is one way of hunting for violations. A campaign gives each of its workers a database of
// its own with the queue installed, asks the mode for a Hunter there, and has it run short
// rounds until the campaign stops.
//
// Sequential mode (here) is the Prop suite's rapid state machine. The concurrent modes run the
// linear package: "stress" (many sessions at once, histories checked for linearizability) and
// "scheduled" (interleavings drawn by rapid). Each registers itself with registerMode from a
// file of its own; "all" takes turns between them (mode_mixed.go).
type Mode interface {
	Name() string
	// Properties lists the properties (model.P*) that the mode's rounds check.
	Properties() []model.Property
	// Start prepares one worker's hunter. The database is fresh and the queue installed.
	Start(ctx context.Context, w *Worker) (Hunter, error)
}

// Worker is what a hunter gets: its queue, its database, the campaign's seed, and where to
// count its work and save its findings.
type Worker struct {
	Index int
	Queue *sut.Queue
	In    *sut.Installed
	Seed  uint64
	Tally *Tally
	Saver *Saver
}

// Hunter runs a worker's rounds.
type Hunter interface {
	// Round runs one bounded unit of search (about a second, plus shrinking when it finds
	// something) and returns the violations it found. A cancelled ctx abandons the round; its
	// results are then discarded. An error is the harness failing, not a verdict.
	Round(ctx context.Context, n int) ([]*Failure, error)
	Close()
}

// Replayer is a hunter that can first replay the cases earlier campaigns saved. It runs on one
// worker before any round starts.
type Replayer interface {
	ReplaySaved(ctx context.Context) ([]*Failure, error)
}

// Prober is a mode that can say up front that it cannot run here (a missing tool, a queue
// without lock.sql), so the command fails before starting anything.
type Prober interface {
	Usable(q *sut.Queue) error
}

var modes = map[string]Mode{}

func registerMode(m Mode) { modes[m.Name()] = m }

func modeNames() string { return strings.Join(sortedKeys(modes), ", ") }

func lookupMode(cmd, name string) (Mode, error) {
	if m, ok := modes[name]; ok {
		return m, nil
	}
	return nil, usageErrorf("%s: unknown mode %q; use --mode %s", cmd, name, modeNames())
}

func init() { registerMode(sequential{}) }

// sequential is the Prop suite: rapid drives the model and the queue one operation at a time.
type sequential struct{}

func (sequential) Name() string { return "sequential" }

func (sequential) Properties() []model.Property {
	return []model.Property{model.PClaimOrder, model.PFencing, model.PExclusion, model.PGenerations, model.PDoneOnce,
		model.PSkipLocked, model.PRecovery, model.PDBTime, model.PNoErrors}
}

// roundChecks is how many property runs make a sequential round: enough to amortise a round's
// setup, few enough that a stop request is honoured within a fraction of a second.
const roundChecks = 20

func (sequential) Start(ctx context.Context, w *Worker) (Hunter, error) {
	env, err := program.NewEnv(ctx, w.In, program.Workers, program.Lockers)
	if err != nil {
		return nil, err
	}
	return &seqHunter{w: w, env: env, test: propTest + "/" + subtestName(w.Queue.Name)}, nil
}

type seqHunter struct {
	w    *Worker
	env  *program.Env
	test string // rapid's test name, which names the fail files
}

func (h *seqHunter) Close() { h.env.Close() }

func (h *seqHunter) Round(ctx context.Context, n int) ([]*Failure, error) {
	begin := time.Now()
	res := search(ctx, h.env, h.test, roundSeed(h.w.Seed, h.w.Index, n), h.w.Tally)
	// The last property run may have left a locker holding a row: end it, so that a round of
	// another mode on this database starts from an idle queue.
	defer h.env.Reset(context.Background())
	if !res.Failed {
		return nil, nil
	}
	if ctx.Err() != nil {
		h.w.Saver.discard(res.FailFile)
		return nil, ctx.Err()
	}
	f := &Failure{Mode: "sequential", Worker: h.w.Index, Round: n, Seed: res.Seed, Verdict: res.Verdict(), Output: res.Output,
		ShrinkS: (res.Elapsed - res.FirstFailure).Seconds(), foundAt: begin.Add(res.FirstFailure)}
	f.classify()
	if f.Property < 0 {
		// Not a broken promise: the harness itself failed (a lost connection, a reset that could
		// not run). Such a case must not be kept as a regression of the queue.
		h.w.Saver.discard(res.FailFile)
		return nil, fmt.Errorf("%s", f.Verdict)
	}
	if err := h.w.Saver.keep(f, res.FailFile, h.test, h.w.Queue); err != nil {
		return []*Failure{f}, err
	}
	return []*Failure{f}, h.w.Saver.keepProgram(ctx, f, h.env, h.test, h.w.Queue)
}

// ReplaySaved runs every case saved for this queue under the Prop test's name, as `go test`
// would before its random search.
func (h *seqHunter) ReplaySaved(ctx context.Context) ([]*Failure, error) {
	files := h.w.Saver.saved(h.test)
	if len(files) == 0 {
		return nil, nil
	}
	defer setRapid("rapid.checks", fmt.Sprint(roundChecks))
	defer setRapid("rapid.failfile", "")
	setRapid("rapid.checks", "0")
	var out []*Failure
	for _, file := range files {
		setRapid("rapid.failfile", file)
		res := search(ctx, h.env, h.test, 1, h.w.Tally)
		if !res.Failed {
			continue
		}
		f := &Failure{Mode: "sequential", Worker: h.w.Index, Round: -1, Seed: res.Seed, Verdict: res.Verdict(), Output: res.Output, Known: true}
		f.classify()
		if f.Property < 0 {
			return out, fmt.Errorf("replaying %s: %s", file, f.Verdict)
		}
		f.ReplayFile = file
		f.ReplayCommand = h.w.Saver.replayCommand(h.test, h.w.Queue)
		out = append(out, f)
	}
	return out, nil
}

// Saver puts replayable cases where `go test` finds them. Rapid writes fail files relative to
// the working directory, which during a campaign is a scratch folder (so that rapid does not
// replay, on every round, the cases the campaign already knows); kept files are moved to the
// same relative place under Root, the module root.
type Saver struct {
	Root    string // where `go test -run PropQueue .` runs
	Reports string // the campaign's report folder, for findings that are not rapid cases
	Scratch string // the working directory while searching
	Keep    bool   // false: findings are reported but no file is kept (mutants)
}

// saved lists the cases already kept for test, oldest first.
func (s *Saver) saved(test string) []string {
	name := rapidFileName(test)
	files, _ := filepath.Glob(filepath.Join(s.Root, "testdata", "rapid", name, name+"-*.fail"))
	sort.Strings(files)
	return files
}

func (s *Saver) discard(rel string) {
	if rel != "" {
		os.Remove(filepath.Join(s.Scratch, rel))
	}
}

// keep moves a new fail file under Root and fills in the failure's replay instructions.
func (s *Saver) keep(f *Failure, rel, test string, q *sut.Queue) error {
	if !s.Keep || rel == "" {
		return nil
	}
	src := filepath.Join(s.Scratch, rel)
	dst := filepath.Join(s.Root, rel)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("saving the failing case under %s: %v", s.Root, unwrapPath(err))
	}
	// Two failures in one second of one process get the same name from rapid; keep both.
	for i := 2; ; i++ {
		if _, err := os.Stat(dst); os.IsNotExist(err) {
			break
		}
		dst = strings.TrimSuffix(filepath.Join(s.Root, rel), ".fail") + fmt.Sprintf("-%d.fail", i)
	}
	if err := moveFile(src, dst); err != nil {
		return fmt.Errorf("saving the failing case as %s: %v", dst, unwrapPath(err))
	}
	f.ReplayFile = dst
	f.ReplayCommand = s.replayCommand(test, q)
	return nil
}

// keepProgram reduces the failure further (env holds rapid's final replay of its shrunk case)
// and saves the program under testdata/programs/found, where TestPropPrograms replays it on
// every `go test`: a short, readable, deterministic regression case next to rapid's.
func (s *Saver) keepProgram(ctx context.Context, f *Failure, env *program.Env, test string, q *sut.Queue) error {
	rf := program.Reduced(ctx, env, test, f.Output)
	var v *model.Violation
	if !errors.As(rf.Err, &v) {
		return nil // the reduction did not reproduce it; rapid's case stands alone
	}
	f.Output, f.Verdict = rf.Report, rf.Verdict()
	f.classify()
	if !s.Keep {
		return nil
	}
	header := map[string]string{"queue": q.Ref(s.Root), "found by": "pgqcheck run (" + test + ")", "found": time.Now().UTC().Format(time.RFC3339)}
	path, _, err := program.Save(filepath.Join(s.Root, program.FoundDir), test, rf, header)
	if err != nil {
		return fmt.Errorf("saving the reduced program: %v", unwrapPath(err))
	}
	base := strings.TrimSuffix(filepath.Base(path), ".ops")
	f.ProgramFile = path
	f.ProgramCommand = s.goTest("^TestPropPrograms$/^"+regexpQuote(base)+"$", q)
	return nil
}

// keepFuzzInput saves a scheduled failure's choices as a FuzzScheduled corpus entry, which
// `go test ./fuzz` replays: the same run, without rapid, next to rapid's fail file.
func (s *Saver) keepFuzzInput(f *Failure, data []byte, q *sut.Queue) error {
	if !s.Keep || len(data) == 0 {
		return nil
	}
	dir := filepath.Join(s.Root, "fuzz", fuzz.ScheduledCorpusDir)
	sum := sha256.Sum256(data)
	name := "found-" + linear.SafeName(q.Name) + "-" + hex.EncodeToString(sum[:6])
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("saving the fuzz input: %v", unwrapPath(err))
	}
	if err := os.WriteFile(path, linear.FuzzInputFile(data), 0o644); err != nil {
		return fmt.Errorf("saving the fuzz input: %v", unwrapPath(err))
	}
	f.FuzzFile = path
	f.FuzzCommand = s.goTestPkg("^FuzzScheduled$/^"+regexpQuote(name)+"$", q, "./fuzz")
	return nil
}

// goTest is a `go test` line run from the module root against q (a folder queue is passed in
// PGQCHECK_SQL_DIR: the replay must judge the same queue).
func (s *Saver) goTest(run string, q *sut.Queue) string { return s.goTestPkg(run, q, ".") }

func (s *Saver) goTestPkg(run string, q *sut.Queue, pkg string) string {
	cmd := "cd " + shellQuote(s.Root) + " && "
	if dir := q.Dir(); dir != "" {
		cmd += sut.EnvSQLDir + "=" + shellQuote(dir) + " "
	}
	return cmd + "go test -count=1 -run " + shellQuote(run) + " " + pkg
}

// replayCommand is the exact `go test` line that replays the kept cases of test on q: the
// test must run against the same queue, so a folder queue is passed in PGQCHECK_SQL_DIR.
func (s *Saver) replayCommand(test string, q *sut.Queue) string {
	top, sub, _ := strings.Cut(test, "/")
	return s.goTest("^"+top+"$/^"+regexpQuote(sub)+"$", q)
}

func regexpQuote(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\.+*?()|[]{}^$`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
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

func moveFile(src, dst string) error {
	if err := os.Rename(src, dst); err == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(dst)
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Remove(src)
}
