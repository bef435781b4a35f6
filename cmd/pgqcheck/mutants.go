package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"pgqcheck/mutant"
	"pgqcheck/program"
	"pgqcheck/sut"
	"pgqcheck/sut/pgserver"
)

func init() {
	commandDetails["mutants"] = `Each folder under --dir is a deliberately broken queue with mutant.json, {"bug": "...",
"expect": ["Prop"] and/or ["Linear"]}. Every mutant is installed in a fresh database and hunted
by the suites it expects until one catches it or --budget runs out; the kill table shows what
caught it, how soon, and after how many property runs. Then every correct built-in queue must
pass --checks property runs. The exit status is 1 if a mutant survives or a correct queue fails.
Nothing is saved under testdata/: a mutant's failure is the expected outcome, not a regression.
`
}

// mutantChecks is rapid's checks per round while hunting a mutant: one default go test run.
const mutantChecks = 100

func runMutants(c *cli, args []string) error {
	fs := c.flags("mutants")
	dir := fs.String("dir", filepath.Join("testdata", "mutants"), "folder of mutant folders (default: testdata/mutants here or in the module root)")
	filter := fs.String("run", "", "only the mutants whose folder name matches this regexp")
	budget := fs.Duration("budget", time.Minute, "search time per mutant and suite before it counts as surviving")
	checks := fs.Int("checks", 300, "property runs each correct built-in queue must pass")
	builtins := fs.Bool("builtins", true, "also require every correct built-in queue to pass")
	seed := fs.Uint64("seed", 0, "seed for the searches (0: pick one and print it)")
	shrink := fs.Duration("shrink-time", 0, "time rapid may spend shrinking each catch (a mutant only needs catching; 0 reports the first failing run)")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErrorf("mutants: unexpected argument %q; pass the folder with --dir", pos[0])
	}
	if err := positive("mutants", "--budget", *budget); err != nil {
		return err
	}
	if *checks < 1 {
		return usageErrorf("mutants: --checks must be at least 1 (got %d)", *checks)
	}
	var re *regexp.Regexp
	if *filter != "" {
		if re, err = regexp.Compile(*filter); err != nil {
			return usageErrorf("mutants: --run %q is not a regular expression (%v)", *filter, err)
		}
	}
	mdir := *dir
	if _, err := os.Stat(mdir); err != nil && !filepath.IsAbs(mdir) {
		if root, ok := moduleRoot(); ok {
			if _, err := os.Stat(filepath.Join(root, mdir)); err == nil {
				mdir = filepath.Join(root, mdir)
			}
		}
	}
	if st, err := os.Stat(mdir); err != nil || !st.IsDir() {
		return usageErrorf("mutants: --dir %s is not a readable folder; pass the folder holding the mutant folders", *dir)
	}
	all, err := mutant.Load(mdir)
	if err != nil {
		return &exitErr{exitError, err.Error()}
	}
	var ms []*mutant.Mutant
	for _, m := range all {
		if re == nil || re.MatchString(m.Name) {
			ms = append(ms, m)
		}
	}
	if len(ms) == 0 {
		return usageErrorf("mutants: no mutant in %s matches --run %q; check the pattern", mdir, *filter)
	}
	if *seed == 0 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		*seed = binary.LittleEndian.Uint64(b[:]) >> 1
	}
	saver, err := newSaver("mutants", "", false)
	if err != nil {
		return err
	}
	defer saver.close()

	ctx := c.sig.soft
	srv, err := c.startServer(ctx)
	if err != nil {
		return err
	}
	defer srv.Close()
	setRapid("rapid.nofailfile", "true")
	setRapid("rapid.shrinktime", shrink.String())
	fmt.Fprintf(c.stdout, "mutants: %d from %s, budget %s each, seed %d\n\n", len(ms), mdir, *budget, *seed)

	var rows []mutantRow
	var survived, harness []string
	for i, m := range ms {
		for _, suite := range m.Expect {
			row := mutantRow{name: m.Name, suite: suite, bug: m.Bug}
			switch suite {
			case "Prop":
				row.hunt(ctx, srv, m.Queue, roundSeedFn(*seed, i), *budget)
			default:
				row.result = "NOT RUN"
				row.caughtBy = fmt.Sprintf("no %s hunt in this build (stress mode comes with the linear package)", suite)
				if hm, ok := modes["stress"]; ok && suite == "Linear" {
					row = mutantRow{name: m.Name, suite: suite, bug: m.Bug}
					row.huntMode(ctx, srv, hm, m.Queue, *seed, i, *budget)
				}
			}
			if ctx.Err() != nil {
				return &exitErr{exitError, "pgqcheck: mutants: interrupted before every mutant ran; the databases were dropped"}
			}
			fmt.Fprintf(c.stdout, "  %s (%s): %s %s\n", row.name, suite, row.result, row.caughtBy)
			rows = append(rows, row)
			switch {
			case row.harness != "":
				harness = append(harness, m.Name+": "+row.harness)
			case row.result != "caught":
				survived = append(survived, m.Name+" ("+suite+")")
			}
		}
	}

	fmt.Fprintln(c.stdout, "\nkill table:")
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MUTANT\tSUITE\tRESULT\tCAUGHT BY\tTIME\tCHECKS\tBUG")
	for _, row := range rows {
		row.print(tw)
	}
	tw.Flush()

	var failedQueues []string
	if *builtins {
		fmt.Fprintln(c.stdout, "\ncorrect queues:")
		tw = tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "QUEUE\tRESULT\tCHECKS\tTIME\tDETAIL")
		for _, name := range sut.Builtins() {
			q := sut.MustBuiltin(name)
			res, err := checkQueue(ctx, srv, q, *checks, roundSeed(*seed, 1<<15, 0))
			if ctx.Err() != nil {
				return &exitErr{exitError, "pgqcheck: mutants: interrupted before every queue ran; the databases were dropped"}
			}
			switch {
			case err != nil:
				harness = append(harness, name+": "+oneLine(err.Error()))
				fmt.Fprintf(tw, "%s\tERROR\t\t\t%s\n", name, oneLine(err.Error()))
			case res.Failed:
				failedQueues = append(failedQueues, name)
				fmt.Fprintf(tw, "%s\tFAILED\t%d\t%s\t%s\n", name, res.Checks, round(res.Elapsed), res.Verdict())
			default:
				fmt.Fprintf(tw, "%s\tpassed\t%d\t%s\t\n", name, res.Checks, round(res.Elapsed))
			}
		}
		tw.Flush()
	}

	fmt.Fprintln(c.stdout)
	switch {
	case len(harness) > 0:
		return &exitErr{exitError, "pgqcheck: mutants: the harness failed (" + harness[0] + "); fix the environment and rerun"}
	case len(survived) > 0 || len(failedQueues) > 0:
		var parts []string
		if len(survived) > 0 {
			parts = append(parts, fmt.Sprintf("%d mutant(s) survived: %s", len(survived), strings.Join(survived, ", ")))
		}
		if len(failedQueues) > 0 {
			parts = append(parts, fmt.Sprintf("correct queue(s) failed: %s", strings.Join(failedQueues, ", ")))
		}
		return &violation{"pgqcheck: mutants: " + strings.Join(parts, "; ")}
	}
	fmt.Fprintf(c.stdout, "mutants: every mutant was caught and every correct queue passed\n")
	return nil
}

// shortVerdict is a verdict's "property N (name)", for the table.
func shortVerdict(v string) string {
	if m := verdictRE.FindString(v); m != "" {
		return m
	}
	return v
}

func roundSeedFn(seed uint64, i int) func(n int) uint64 {
	return func(n int) uint64 { return roundSeed(seed, i, n) }
}

type mutantRow struct {
	name, suite, bug string
	result           string // caught, SURVIVED, NOT RUN
	caughtBy         string
	time             time.Duration // to the first failing run
	checks           int
	harness          string
}

func (r *mutantRow) print(tw *tabwriter.Writer) {
	t, n := "", ""
	if r.result == "caught" || r.result == "SURVIVED" {
		t, n = round(r.time).String(), fmt.Sprint(r.checks)
	}
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.name, r.suite, r.result, r.caughtBy, t, n, r.bug)
}

// hunt searches a mutant with the Prop state machine until a property catches it or the budget
// is spent.
func (r *mutantRow) hunt(ctx context.Context, srv *pgserver.Server, q *sut.Queue, seeds func(int) uint64, budget time.Duration) {
	env, cleanup, err := installEnv(ctx, srv, q)
	defer cleanup()
	if err != nil {
		r.result, r.harness = "ERROR", oneLine(err.Error())
		r.caughtBy = r.harness
		return
	}
	setRapid("rapid.checks", fmt.Sprint(mutantChecks))
	var tally Tally
	start := time.Now()
	for n := 0; ctx.Err() == nil; n++ {
		res := search(ctx, env, propTest+"/"+subtestName(q.Name), seeds(n), &tally)
		if res.Failed {
			v := res.Verdict()
			if !strings.HasPrefix(v, "property ") {
				r.result, r.harness, r.caughtBy = "ERROR", v, v
				return
			}
			r.result, r.caughtBy = "caught", shortVerdict(v)
			r.time = time.Since(start) - res.Elapsed + res.FirstFailure
			r.checks += res.Checks
			return
		}
		r.checks += res.Checks
		if time.Since(start) > budget {
			break
		}
	}
	r.result, r.time = "SURVIVED", time.Since(start)
}

// huntMode searches a mutant with a registered concurrent mode.
func (r *mutantRow) huntMode(ctx context.Context, srv *pgserver.Server, m Mode, q *sut.Queue, seed uint64, i int, budget time.Duration) {
	db, err := srv.CreateDatabase(ctx, "pgqcheck_mutants_"+q.Name)
	if err != nil {
		r.result, r.harness = "ERROR", oneLine(err.Error())
		return
	}
	defer db.Drop(context.Background())
	in, err := sut.Install(ctx, db.DSN, q)
	if err != nil {
		r.result, r.harness = "ERROR", oneLine(err.Error())
		return
	}
	defer in.Close()
	var tally Tally
	// A mutant's failure is expected: its report folder is scratch, removed with the row.
	scratch, err := os.MkdirTemp("", "pgqcheck-mutant-")
	if err != nil {
		r.result, r.harness = "ERROR", oneLine(err.Error())
		return
	}
	defer os.RemoveAll(scratch)
	h, err := m.Start(ctx, &Worker{Index: i, Queue: q, In: in, Seed: seed, Tally: &tally, Saver: &Saver{Scratch: scratch}})
	if err != nil {
		r.result, r.harness = "ERROR", oneLine(err.Error())
		return
	}
	defer h.Close()
	start := time.Now()
	for n := 0; ctx.Err() == nil && time.Since(start) < budget; n++ {
		fs, err := h.Round(ctx, n)
		if err != nil {
			r.result, r.harness = "ERROR", oneLine(err.Error())
			return
		}
		if len(fs) > 0 {
			r.result, r.caughtBy, r.time = "caught", shortVerdict(fs[0].Verdict), time.Since(start)
			r.checks = int(tally.Snapshot().Checks + tally.Snapshot().Histories)
			return
		}
	}
	r.result, r.time = "SURVIVED", time.Since(start)
	r.checks = int(tally.Snapshot().Checks + tally.Snapshot().Histories)
}

// checkQueue runs the Prop state machine on a correct queue for the given number of runs.
func checkQueue(ctx context.Context, srv *pgserver.Server, q *sut.Queue, checks int, seed uint64) (searchResult, error) {
	env, cleanup, err := installEnv(ctx, srv, q)
	defer cleanup()
	if err != nil {
		return searchResult{}, err
	}
	setRapid("rapid.checks", fmt.Sprint(checks))
	var tally Tally
	res := search(ctx, env, propTest+"/"+subtestName(q.Name), seed, &tally)
	if res.Failed && !strings.HasPrefix(res.Verdict(), "property ") {
		return res, fmt.Errorf("%s", res.Verdict())
	}
	return res, nil
}

// installEnv gives q a fresh database and the Prop suite's sessions.
func installEnv(ctx context.Context, srv *pgserver.Server, q *sut.Queue) (*program.Env, func(), error) {
	var undo []func()
	cleanup := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	db, err := srv.CreateDatabase(ctx, "pgqcheck_mutants_"+q.Name)
	if err != nil {
		return nil, cleanup, err
	}
	undo = append(undo, func() { _ = db.Drop(context.Background()) })
	in, err := sut.Install(ctx, db.DSN, q)
	if err != nil {
		return nil, cleanup, err
	}
	undo = append(undo, in.Close)
	env, err := program.NewEnv(ctx, in, program.Workers, program.Lockers)
	if err != nil {
		return nil, cleanup, err
	}
	undo = append(undo, env.Close)
	return env, cleanup, nil
}
