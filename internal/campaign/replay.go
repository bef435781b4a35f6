package campaign

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/pgqcheck/pgqcheck/internal/hunt"
	"github.com/pgqcheck/pgqcheck/internal/linear/report"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/textfmt"
	"github.com/pgqcheck/pgqcheck/internal/verdict"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

// replaySaved replays, on an installed queue, every program saved under the module root's
// testdata/programs/found/, and returns those that still fail. A saved program is judged on the
// queue under test: the queue named in its header is where it was found, not its target. A
// scheduled program this build cannot replay yet is listed, not counted as passing.
func replaySaved(ctx context.Context, in *sut.Installed, s *Saver) (fs []*Failure, err error) {
	files := s.savedPrograms()
	if len(files) == 0 {
		return nil, nil
	}
	e, err := hunt.NewSequential(ctx, in)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	defer e.Reset(context.Background())
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			return fs, fmt.Errorf("reading the saved program %s: %v", file, PathCause(err))
		}
		p, err := program.Parse(string(b))
		if err != nil {
			return fs, fmt.Errorf("saved program %s: %v; fix or delete it", file, err)
		}
		f, _, err := e.Replay(ctx, p)
		if err != nil {
			return fs, fmt.Errorf("replaying %s: %v", file, err)
		}
		if f == nil {
			continue
		}
		fl := newFailure(f, string(p.Mode()), 0, -1, 0)
		if p.Header["mode"] == "scheduled" {
			fl.Mode = "scheduled"
		}
		fl.Known = true
		s.pointToProgram(fl, file, in.Queue)
		fs = append(fs, fl)
	}
	return fs, nil
}

// Replayed is what replaying one saved case concluded.
type Replayed struct {
	File  string
	Kind  string // "program", "scheduled program", "fuzz input", "history"
	Queue string // the queue judged (a history names its own)
	// Finding is the broken promise (nil: the case held).
	Finding *verdict.Finding
	// Trace is the program as it ran, with the queue's answers (programs).
	Trace string
	// History is a saved history's verdict.
	History *HistoryVerdict
}

// Held reports whether the case broke no property.
func (r *Replayed) Held() bool {
	if r.History != nil {
		return r.History.OK
	}
	return r.Finding == nil
}

// InputError is a case that cannot be replayed as given (unreadable, not a case); the message
// names the fix.
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

// ReplayFile replays one saved case against q: an .ops program (on a fresh database), a
// FuzzScheduled input (one scheduled run from its choices), or a saved history (re-checked, no
// database needed). srv is called only when a database is needed. A concurrent run's report
// folder is kept (under the temporary folder) only when the case fails.
func ReplayFile(ctx context.Context, srv func() (*pgserver.Server, error), q *sut.Queue, path string) (*Replayed, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &InputError{fmt.Sprintf("%s cannot be read (%v); pass an .ops program, a FuzzScheduled input or a history.json", path, PathCause(err))}
	}
	r := &Replayed{File: path, Queue: q.Source}
	text := bytes.TrimSpace(b)
	switch {
	case bytes.HasPrefix(text, []byte("{")):
		return ReplayHistory(path, "")
	case bytes.HasPrefix(text, []byte("go test fuzz v1")):
		r.Kind = "fuzz input"
	default:
		r.Kind = "program"
	}
	var p *program.Program
	if r.Kind == "program" {
		if p, err = program.Parse(string(b)); err != nil {
			return nil, &InputError{fmt.Sprintf("%s is not an .ops program (%v); pass an .ops program, a FuzzScheduled input or a history.json", path, textfmt.OneLine(err.Error()))}
		}
		if len(p.Ops) == 0 {
			return nil, &InputError{fmt.Sprintf("%s holds no operations; pass an .ops program with one operation per line", path)}
		}
		if p.Header["mode"] == "scheduled" {
			r.Kind = "scheduled program"
		}
	}
	s, err := srv()
	if err != nil {
		return nil, err
	}
	err = OnDatabase(ctx, s, "pgqcheck_replay_"+q.Name, q, func(in *sut.Installed, _ string) (err error) {
		switch r.Kind {
		case "fuzz input":
			dir, err := os.MkdirTemp("", "pgqcheck-replay-")
			if err != nil {
				return err
			}
			if r.Finding, err = hunt.ReplayFuzzInput(ctx, in, path, dir); r.Finding == nil || r.Finding.ReportDir == "" {
				os.RemoveAll(dir)
			}
			return err
		default:
			var e *hunt.Sequential
			if e, err = hunt.NewSequential(ctx, in); err != nil {
				return err
			}
			defer e.Close()
			r.Finding, r.Trace, err = e.Replay(ctx, p)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if r.Finding != nil && r.Finding.Trace != "" {
		r.Trace = r.Finding.Trace
	}
	return r, nil
}

// ReplayHistory re-checks a saved history and, when htmlOut is set, writes porcupine's timeline
// there. A timeline that cannot be written is the error beside a verdict.
func ReplayHistory(path, htmlOut string) (*Replayed, error) {
	v, err := CheckHistory(path, htmlOut)
	if v == nil {
		return nil, &InputError{fmt.Sprintf("%s is not a history (%s); pass a history.json from a report folder", path, textfmt.OneLine(fmt.Sprint(err)))}
	}
	return &Replayed{File: path, Kind: "history", History: v}, err
}

// Print writes the verdict and the program with the queue's answers.
func (r *Replayed) Print(w io.Writer) {
	p := lines(w)
	p("replay: %s (%s)", r.File, r.Kind)
	if h := r.History; h != nil {
		p("%s", h.Text)
		for _, pr := range h.Problems {
			p("  - %s", pr)
		}
		if h.Explanation != "" {
			fmt.Fprint(w, h.Explanation)
		}
		return
	}
	p("queue: %s", r.Queue)
	if r.Finding != nil {
		p("%s", r.Finding.Verdict())
	} else {
		p("held: no property broken")
	}
	if r.Trace != "" {
		p("program (queue's answers):")
		fmt.Fprint(w, r.Trace)
	}
	if f := r.Finding; f != nil {
		if f.Model != "" {
			p("model now: %s", f.Model)
		}
		if f.ReportDir != "" {
			p("report: %s", f.ReportDir)
		}
	}
}

// HistoryVerdict is what re-checking a saved history concluded.
type HistoryVerdict struct {
	OK          bool
	Violation   *model.Violation // nil when OK, or when the history is malformed
	Text        string           // the one-line verdict
	Problems    []string
	Explanation string
}

// CheckHistory re-checks a saved history (no Postgres needed) and, when htmlOut is set, writes
// porcupine's timeline. A nil verdict means the file is not a history; a non-nil error with a
// verdict means only the timeline could not be written.
func CheckHistory(path, htmlOut string) (*HistoryVerdict, error) {
	v, err := report.CheckFile(path, htmlOut)
	if v == nil {
		return nil, err
	}
	return &HistoryVerdict{OK: v.OK, Violation: v.Violation, Text: v.String(), Problems: v.Problems, Explanation: v.Explanation}, err
}
