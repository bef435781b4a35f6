// Package corpus is the regression corpus: every program a search ever found, saved as an
// .ops file under testdata/programs/, and replayed against the queue under judgement. The
// queue a program was found on is information in its header, not its target: a team that
// fixes its queue in a new folder, or keeps two versions, gets a verdict on the one it points
// at. A mutant's program (its header names the mutant) must also keep catching that mutant.
package corpus

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/linear/schedule"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/sequential"
	"github.com/pgqcheck/pgqcheck/internal/verdict"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// Dir holds the corpus, relative to the module root: one folder per kind of case
// (found/: what searches found; mutants/: the shortest program catching each mutant).
var Dir = filepath.Join("testdata", "programs")

// Case is one saved program.
type Case struct {
	Path    string
	Program *program.Program
}

// Mutant is the mutant a case must keep catching ("" for a found case).
func (c *Case) Mutant() string { return c.Program.Header[program.HeaderMutant] }

// Name is the case's file name without its extension.
func (c *Case) Name() string { return trimExt(filepath.Base(c.Path)) }

func trimExt(s string) string { return s[:len(s)-len(filepath.Ext(s))] }

// Load reads every program under root's corpus folders, sorted by path.
func Load(root string) ([]*Case, error) {
	files, _ := filepath.Glob(filepath.Join(root, Dir, "*", "*.ops"))
	return read(files)
}

// LoadFolder reads every program of one folder (a user's corpus, as pgqcheck.Judge keeps it),
// sorted by path; a folder that does not exist yet holds none.
func LoadFolder(dir string) ([]*Case, error) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.ops"))
	return read(files)
}

func read(files []string) ([]*Case, error) {
	sort.Strings(files)
	var out []*Case
	for _, f := range files {
		p, err := program.ReadFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, &Case{Path: f, Program: p})
	}
	return out, nil
}

// Replayer replays cases against one installed queue. It opens its sessions on first use;
// Close them when done.
type Replayer struct {
	In *sut.Installed
	// Env runs the sequential cases; when nil the replayer opens one of its own on first use.
	// One the caller gives stays the caller's to close.
	Env *sequential.Env
	// ReportDir is where a scheduled case's failure writes its report (default: a temporary folder).
	ReportDir string

	ownEnv bool
	sched  *schedule.Scheduler
	trace  string
	// landings are the last replayed program's (Landings).
	landings func() []program.Landing
}

// Trace is the last replayed program as it ran, with the queue's answers, held or not.
func (r *Replayer) Trace() string { return r.trace }

// Landings are where the last replayed program's statements after its pauses to just before a
// lease's edge ran, against where the pauses aimed them.
func (r *Replayer) Landings() []program.Landing {
	if r.landings == nil {
		return nil
	}
	return r.landings()
}

// Replay runs one case against the queue: nil when it held, the finding when it failed, an
// error when the harness did.
func (r *Replayer) Replay(ctx context.Context, p *program.Program) (*verdict.Finding, error) {
	if p.Mode() == program.Scheduled {
		// The sequential sessions end what they hold first: a claim of a queue whose claims hold
		// a transaction would keep the scheduler's reset waiting for its row lock.
		if r.Env != nil {
			if err := r.Env.Reset(ctx); err != nil {
				return nil, err
			}
		}
		if r.sched == nil {
			r.sched = schedule.NewScheduler(ctx, r.In, schedule.Config{Name: "replay-" + r.In.Queue.Name, ReportDir: r.ReportDir})
		}
		f, err := r.sched.ReplayProgram(p)
		r.trace, r.landings = r.sched.Trace(), r.sched.Landings
		return f, err
	}
	if r.Env == nil {
		env, err := sequential.NewEnv(ctx, r.In, program.Workers, program.Lockers)
		if err != nil {
			return nil, err
		}
		r.Env, r.ownEnv = env, true
	}
	env := r.Env
	err := sequential.Replay(ctx, env, p.Ops)
	r.trace, r.landings = env.Program(), func() []program.Landing { return env.W.Approach.Landings }
	var v *model.Violation
	switch {
	case err == nil:
		return nil, nil
	case !errors.As(err, &v):
		return nil, err
	}
	return &verdict.Finding{Violation: v, Queue: r.In.Queue.Name, Source: r.In.Queue.Source, Mode: program.Sequential,
		Program: p, Trace: r.trace, Model: env.Model.String()}, nil
}

// Close ends the sessions the replayer opened itself.
func (r *Replayer) Close() {
	if r.ownEnv {
		r.Env.Close()
		r.Env, r.ownEnv = nil, false
	}
	if r.sched != nil {
		r.sched.Close()
		r.sched = nil
	}
}

// Save keeps a finding's program in root's found/ folder, where every later `go test` replays
// it, with a header saying where and when it was found. A program already there is not saved
// twice: fresh is false and path is the existing file.
func Save(root string, f *verdict.Finding, foundBy string) (path string, fresh bool, err error) {
	return SaveIn(filepath.Join(root, program.FoundDir), f, foundBy)
}

// SaveIn is Save into the folder dir itself.
func SaveIn(dir string, f *verdict.Finding, foundBy string) (path string, fresh bool, err error) {
	p := &program.Program{Header: map[string]string{}, Ops: f.Program.Ops}
	for k, v := range f.Program.Header {
		p.Header[k] = v
	}
	p.Header[program.HeaderMode] = string(f.Mode)
	p.SetVerdict(f.Violation)
	p.Header[program.HeaderQueue] = f.Source
	p.Header["found by"] = foundBy
	p.Header["found"] = time.Now().UTC().Format(time.RFC3339)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", false, err
	}
	return program.Save(dir, f.Queue+"-"+string(f.Mode), p)
}
