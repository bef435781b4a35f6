package campaign

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/hunt"
	"github.com/pgqcheck/pgqcheck/internal/linear/stress"
	"github.com/pgqcheck/pgqcheck/internal/mutant"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/textfmt"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

// SuiteModes are the campaign modes that stand for each suite a mutant.json names: `go test`
// demands these of every mutant that expects the suite, and so does the kill table.
var SuiteModes = map[string][]string{
	"Prop":          {"sequential"},
	"PropLeaseTime": {"lease-time"},
	"Linear":        {"stress", "scheduled"},
	"LockOrder":     {"lock-order"},
	"Deploy":        {"deploy"},
}

// KillRow is one mutant hunted by one mode of one suite.
type KillRow struct {
	Mutant, Bug string
	Suite, Mode string
	Caught      bool
	Property    model.Property // what caught it, when caught
	Verdict     string         // the catching verdict, one line
	Time        time.Duration
	Checks      int64 // property runs (histories, in stress mode) until caught or given up
	// Lost is how many dropped replies and cuts hit in stress mode: a bug only a lost
	// connection shows is not given up before stress.LostFaultsToCatch of them.
	Lost int64
	// Landings is how many statements a pause landed just before a lease's edge, where it
	// aimed, in scheduled mode: a bug only real time shows is not given up before
	// RealTimeLandingsToCatch of them.
	Landings int64
	Err      string // the harness failed: no verdict
	// Failure is the catch itself: its program, trace and report folder.
	Failure *Failure
}

// Result is the row's outcome in a word.
func (r KillRow) Result() string {
	switch {
	case r.Err != "":
		return "ERROR"
	case r.Caught:
		return "caught"
	}
	return "SURVIVED"
}

// QueueRow is a correct built-in queue, which must pass.
type QueueRow struct {
	Queue   string
	Passed  bool
	Checks  int64
	Time    time.Duration
	Verdict string // what failed, when it did
	Err     string
}

// KillTable proves the suite bites: every mutant caught by every mode of every suite its
// mutant.json expects, and every correct queue passing.
type KillTable struct {
	Rows   []KillRow
	Queues []QueueRow
}

// KillConfig is what the table hunts and how long.
type KillConfig struct {
	Server     *pgserver.Server
	Mutants    []*mutant.Mutant
	Budget     time.Duration // per mutant and mode, before it counts as surviving
	Seed       uint64
	ShrinkTime time.Duration // rapid's, per catch (a mutant only needs catching)
	// QueueChecks is how many property runs each correct built-in queue must pass; 0 skips them.
	QueueChecks int
	// Log, when set, hears of each row as it is decided.
	Log io.Writer
	// ReportDir keeps the catches' report folders (default: a scratch folder, removed when the
	// table is done: a mutant's failure is the expected outcome).
	ReportDir string
}

// HuntMutants builds the kill table. An error means ctx ended before every row was decided.
func HuntMutants(ctx context.Context, cfg KillConfig) (*KillTable, error) {
	scratch := cfg.ReportDir
	if scratch == "" {
		dir, err := os.MkdirTemp("", "pgqcheck-mutants-")
		if err != nil {
			return nil, fmt.Errorf("creating a scratch folder: %v; check TMPDIR", PathCause(err))
		}
		// A mutant's failure is expected: its report folders are scratch.
		defer os.RemoveAll(dir)
		scratch = dir
	}
	// Every row is a hunt of its own, on a database of its own: they run side by side, twice as
	// many at once as the machine has cores (the hunts mostly wait, on Postgres or on real
	// time), the longest first so that no long one starts last, and the table keeps the
	// mutants' order whatever order they finish in.
	type job struct {
		row, i      int
		m           *mutant.Mutant
		suite, mode string
	}
	var jobs []job
	kt := &KillTable{}
	for i, m := range cfg.Mutants {
		for _, suite := range m.Expect {
			names, ok := SuiteModes[suite]
			if !ok {
				row := KillRow{Mutant: m.Name, Bug: m.Bug, Suite: suite, Err: fmt.Sprintf("mutant.json expects suite %q, which the kill table does not know (Prop, PropLeaseTime, Linear, LockOrder, Deploy)", suite)}
				logRow(row, cfg.Log)
				kt.Rows = append(kt.Rows, row)
				continue
			}
			for _, name := range names {
				jobs = append(jobs, job{len(kt.Rows), i, m, suite, name})
				kt.Rows = append(kt.Rows, KillRow{})
			}
		}
	}
	sort.SliceStable(jobs, func(a, b int) bool { return huntCost(jobs[a].m, jobs[a].mode) > huntCost(jobs[b].m, jobs[b].mode) })
	next := make(chan job, len(jobs))
	for _, j := range jobs {
		next <- j
	}
	close(next)
	var logMu sync.Mutex
	var wg sync.WaitGroup
	for range min(len(jobs), 2*runtime.NumCPU()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				row := huntMutant(ctx, cfg, j.m, j.suite, j.mode, j.i, scratch)
				kt.Rows[j.row] = row
				logMu.Lock()
				logRow(row, cfg.Log)
				logMu.Unlock()
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return kt, ctx.Err()
	}
	if cfg.QueueChecks > 0 {
		for _, name := range sut.Builtins() {
			row := checkCorrect(ctx, cfg, sut.MustBuiltin(name))
			if ctx.Err() != nil {
				return kt, ctx.Err()
			}
			kt.Queues = append(kt.Queues, row)
		}
		if expectsDeploy(cfg.Mutants) {
			kt.Queues = append(kt.Queues, checkDeployed(ctx, cfg, sut.MustBuiltin(sut.DefaultQueue)))
		}
	}
	return kt, nil
}

// huntCost ranks how long a hunt takes, for starting the longest first: real-time mutants in
// scheduled mode wait for a draw that reaches a lease's edge, real-time searches pause in every
// run, a stress round lasts its full duration; everything else is caught in milliseconds.
func huntCost(m *mutant.Mutant, mode string) int {
	switch {
	case mode == "scheduled" && m.Expects("PropLeaseTime"):
		return 3
	case mode == "lease-time", mode == "stress", mode == "deploy":
		return 2
	case mode == "scheduled":
		return 1
	}
	return 0
}

// logRow tells log of a row as it is decided.
func logRow(r KillRow, log io.Writer) {
	if log != nil {
		by := r.Verdict
		if r.Err != "" {
			by = r.Err
		}
		if c := r.chances(); c != "" && r.Err == "" {
			by += " (" + c + ")"
		}
		fmt.Fprintf(log, "  %s (%s, %s): %s %s\n", r.Mutant, r.Suite, r.Mode, r.Result(), by)
	}
}

// huntMutant searches a mutant with one mode until it is caught or the budget is spent.
func huntMutant(ctx context.Context, cfg KillConfig, m *mutant.Mutant, suite, modeName string, i int, scratch string) KillRow {
	row := KillRow{Mutant: m.Name, Bug: m.Bug, Suite: suite, Mode: modeName}
	var tally Tally
	checks := func() int64 {
		t := tally.Snapshot()
		if modeName == "stress" || modeName == "deploy" {
			return t.Histories // a stress or deployment round is one history, not property runs
		}
		return t.Checks
	}
	err := OnDatabase(ctx, cfg.Server, "pgqcheck_mutants_"+m.Name, m.Queue, func(in *sut.Installed, _ string) error {
		w := &Worker{Index: i, Queue: m.Queue, In: in, Seed: cfg.Seed, ShrinkTime: cfg.ShrinkTime, CatchOnly: true, Tally: &tally, Saver: &Saver{Reports: scratch}}
		h, err := modes[modeName].Start(ctx, w)
		if err != nil {
			return err
		}
		defer h.Close()
		start := time.Now()
		defer func() {
			if !row.Caught {
				row.Time = time.Since(start)
			}
			row.Checks = checks()
			c := tally.Snapshot().Counts
			row.Lost, row.Landings = lost(c), c.EdgeLandings
		}()
		// How many lost connections a stress round sees, and how many statements a scheduled
		// minute lands just before a lease's edge, depends on the machine's load: a stress row
		// is not given up before enough lost connections have hit (some bugs show only through
		// one), nor a scheduled row of a mutant only real time shows before enough landings,
		// up to stretch budgets.
		searching := func() bool {
			el := time.Since(start)
			c := tally.Snapshot().Counts
			return el < cfg.Budget || el < stretch*cfg.Budget &&
				(modeName == "stress" && lost(c) < stress.LostFaultsToCatch ||
					modeName == "scheduled" && m.Expects("PropLeaseTime") && c.EdgeLandings < RealTimeLandingsToCatch)
		}
		for n := 0; ctx.Err() == nil && searching(); n++ {
			fs, err := h.Round(ctx, n)
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				return err
			}
			if len(fs) > 0 {
				f := fs[0]
				row.Caught, row.Property, row.Verdict, row.Time, row.Failure = true, f.Property, f.Verdict, f.foundAt.Sub(start), f
				return nil
			}
		}
		return nil
	})
	if err != nil {
		row.Err = textfmt.OneLine(err.Error())
	}
	return row
}

// stretch bounds how many budgets a row may run while waiting for enough lost connections or
// landings.
const stretch = 10

// RealTimeLandingsToCatch is how many statements a scheduled row of a mutant only real time
// shows must have landed just before a lease's edge, where their pauses aimed them, before it
// is given up. Such a catch needs a statement inside the part of a lease the mutant breaks.
// How many histories bring one depends on the machine and its load (claim-shortens-lease was
// caught once per 72 histories on one machine, once per 439 and per 267 with one and three
// busy loops on another, where a kill table's 900 histories missed it); per landing the rate
// held (0.36 with one busy loop and with three, counting each catch as a landing). Where the
// catching runs were looked at, 7 of 26 aimed landings caught it (and 5 of 12 catches came
// without one): at 0.27 a landing, 30 of them miss it with a chance of about 1 in 12,000.
const RealTimeLandingsToCatch = 30

func lost(c program.Counts) int64 { return c.DroppedReplies + c.Cuts }

// checkCorrect runs the Prop state machine on a correct queue for cfg.QueueChecks runs.
func checkCorrect(ctx context.Context, cfg KillConfig, q *sut.Queue) QueueRow {
	row := QueueRow{Queue: q.Name}
	err := OnDatabase(ctx, cfg.Server, "pgqcheck_mutants_"+q.Name, q, func(in *sut.Installed, _ string) error {
		e, err := hunt.NewSequential(ctx, in)
		if err != nil {
			return err
		}
		defer e.Close()
		var tally Tally
		f, st, err := e.Search(ctx, hunt.Settings{Seed: RoundSeed(cfg.Seed, 1<<15, 0), Checks: cfg.QueueChecks, ShrinkTime: cfg.ShrinkTime}, &tally)
		row.Checks, row.Time, row.Passed = int64(st.Checks), st.Elapsed, f == nil && err == nil
		if f != nil {
			row.Verdict = f.Verdict()
		}
		return err
	})
	if err != nil {
		row.Err = textfmt.OneLine(err.Error())
	}
	return row
}

// chances says what a row whose search waits for enough chances (huntMutant) had of them: its
// histories, and a stress row's lost connections; "" for the other rows.
func (r KillRow) chances() string {
	switch r.Mode {
	case "stress":
		return fmt.Sprintf("%d histories, %d dropped replies and cuts", r.Checks, r.Lost)
	case "scheduled":
		return fmt.Sprintf("%d histories, %d statements landed before a lease's edge", r.Checks, r.Landings)
	}
	return ""
}

// Survivors are the rows whose mutant no mode caught ("mutant (suite, mode)").
func (kt *KillTable) Survivors() []string {
	var out []string
	for _, r := range kt.Rows {
		switch {
		case r.Err != "" || r.Caught:
		case r.chances() != "":
			out = append(out, fmt.Sprintf("%s (%s, %s: %v, %s)", r.Mutant, r.Suite, r.Mode, Round(r.Time), r.chances()))
		default:
			out = append(out, fmt.Sprintf("%s (%s, %s)", r.Mutant, r.Suite, r.Mode))
		}
	}
	return out
}

// Failed are the correct queues that did not pass.
func (kt *KillTable) Failed() []string {
	var out []string
	for _, q := range kt.Queues {
		if q.Err == "" && !q.Passed {
			out = append(out, q.Queue)
		}
	}
	return out
}

// Errors are the harness failures, one line each.
func (kt *KillTable) Errors() []string {
	var out []string
	for _, r := range kt.Rows {
		if r.Err != "" {
			out = append(out, r.Mutant+": "+r.Err)
		}
	}
	for _, q := range kt.Queues {
		if q.Err != "" {
			out = append(out, q.Queue+": "+q.Err)
		}
	}
	return out
}

// Print writes the table: one row per mutant and mode, then the correct queues.
func (kt *KillTable) Print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MUTANT\tSUITE\tMODE\tRESULT\tCAUGHT BY\tTIME\tCHECKS\tBUG")
	for _, r := range kt.Rows {
		by, t, n := "", "", ""
		switch {
		case r.Err != "":
			by = r.Err
		case r.Caught:
			by = r.Property.String()
			fallthrough
		default:
			t, n = Round(r.Time).String(), fmt.Sprint(r.Checks)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Mutant, r.Suite, r.Mode, r.Result(), by, t, n, r.Bug)
	}
	tw.Flush()
	if len(kt.Queues) == 0 {
		return
	}
	fmt.Fprintln(w, "\ncorrect queues:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tRESULT\tCHECKS\tTIME\tDETAIL")
	for _, q := range kt.Queues {
		switch {
		case q.Err != "":
			fmt.Fprintf(tw, "%s\tERROR\t\t\t%s\n", q.Queue, q.Err)
		case q.Passed:
			fmt.Fprintf(tw, "%s\tpassed\t%d\t%s\t\n", q.Queue, q.Checks, Round(q.Time))
		default:
			fmt.Fprintf(tw, "%s\tFAILED\t%d\t%s\t%s\n", q.Queue, q.Checks, Round(q.Time), q.Verdict)
		}
	}
	tw.Flush()
}

// Summary is the table's outcome in one line, and whether every promise of it held.
func (kt *KillTable) Summary() (string, bool) {
	var parts []string
	if s := kt.Survivors(); len(s) > 0 {
		parts = append(parts, fmt.Sprintf("%d mutant row(s) survived: %s", len(s), strings.Join(s, ", ")))
	}
	if f := kt.Failed(); len(f) > 0 {
		parts = append(parts, "correct queue(s) failed: "+strings.Join(f, ", "))
	}
	if len(parts) == 0 {
		return "every mutant was caught by every mode its suites demand, and every correct queue passed", true
	}
	return strings.Join(parts, "; "), false
}
