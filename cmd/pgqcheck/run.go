package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"pgqcheck/plan"
	"pgqcheck/sut"
	"pgqcheck/sut/pgserver"
)

func init() {
	commandDetails["run"] = `A campaign: every worker gets a database of its own and runs rounds until the duration is up, a
violation is found (unless --keep-going) or Ctrl-C is pressed. With --mode all (the default) the
rounds take turns: sequential (the Prop state machine), stress (concurrent sessions and injected
faults, the history checked with porcupine) and scheduled (concurrent interleavings drawn by
rapid, so they replay and shrink). The first Ctrl-C stops after the current round and still
writes the report; a second abandons the round.

Every failure is saved where plain go test replays it, and the report prints the exact command:
  sequential  testdata/rapid/TestPropQueue_<queue>/*.fail and testdata/programs/found/*.ops
  scheduled   testdata/rapid/TestLinearScheduled_<queue>/*.fail and
              fuzz/testdata/fuzz/FuzzScheduled/found-* (replayed by go test ./fuzz)
  stress      testdata/histories/found-*.json (re-checked by TestLinearHistories)
A concurrent failure also leaves a report folder next to the report: the whole history and
the failing job's HTML timeline.
For a queue folder, PGQCHECK_SQL_DIR=<folder> is part of the replay: it must judge the same
queue. Cases saved by earlier campaigns are replayed first.

The report (JSON, and a .txt summary) goes into --report; pgqcheck report prints or merges them.
A campaign rerun with the same --seed and --workers repeats each worker's sequential and
scheduled rounds; stress mode's seed fixes its choices, not the timing of concurrent sessions.
`
}

func runCampaign(c *cli, args []string) error {
	fs := c.flags("run")
	duration := fs.Duration("duration", 10*time.Minute, "how long to search")
	workers := fs.Int("workers", max(1, runtime.NumCPU()/2), "workers, each with a database of its own")
	seed := fs.Uint64("seed", 0, "campaign seed (0: pick one and print it)")
	reportDir := fs.String("report", "pgqcheck-reports", "folder for the report JSON and its summary")
	modeName := fs.String("mode", allModes, "how to search: "+allModes+" (each in turn), or one or a comma-separated list of "+modeNames())
	keepGoing := fs.Bool("keep-going", false, "keep searching after a violation (one saved case per property)")
	shrink := fs.Duration("shrink-time", 30*time.Second, "time rapid may spend shrinking a failure before saving it")
	planSizes := fs.String("plan-sizes", "10000,100000", "done-row counts at which to measure the claim's cost (property 10) after the campaign; empty: skip")
	root := fs.String("corpus", "", "module root under whose testdata/ failing cases are saved (default: the pgqcheck module above the working directory)")
	var qf queueFlags
	qf.add(fs)
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErrorf("run: unexpected argument %q; run takes only flags (pgqcheck run -h)", pos[0])
	}
	if err := positive("run", "--duration", *duration); err != nil {
		return err
	}
	if *shrink < 0 {
		return usageErrorf("run: --shrink-time cannot be negative (got %s)", *shrink)
	}
	if *workers < 1 {
		return usageErrorf("run: --workers must be at least 1 (got %d)", *workers)
	}
	sizes, err := parseSizes(*planSizes)
	if err != nil {
		return usageErrorf("run: --plan-sizes %q: %v; give comma-separated done-row counts such as 10000,100000, or an empty string", *planSizes, err)
	}
	mode, err := lookupModes("run", *modeName)
	if err != nil {
		return err
	}
	q, err := qf.load("run")
	if err != nil {
		return err
	}
	if p, ok := mode.(Prober); ok {
		if err := p.Usable(q); err != nil {
			return err
		}
	}
	repDir, err := filepath.Abs(*reportDir)
	if err == nil {
		err = writableDir(repDir)
	}
	if err != nil {
		return usageErrorf("run: --report %s cannot be written (%v); pass a writable folder", *reportDir, err)
	}
	saver, err := newSaver("run", *root, true)
	if err != nil {
		return err
	}
	defer saver.close()
	saver.Reports = repDir
	if *seed == 0 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		*seed = binary.LittleEndian.Uint64(b[:]) >> 1
	}

	setRapid("rapid.shrinktime", shrink.String())
	cp := &campaign{c: c, mode: mode, q: q, workers: *workers, seed: *seed, duration: *duration, keepGoing: *keepGoing, saver: saver, planSizes: sizes}
	c.sig.onSoft("pgqcheck: stopping after the current round and writing the report (press Ctrl-C again to abandon the round)")
	rep, err := cp.run()
	if rep == nil {
		return err
	}
	base := filepath.Join(repDir, fmt.Sprintf("run-%s-%s", rapidFileName(q.Name), rep.Started.Format("20060102-150405")))
	if werr := writeJSON(base+".json", rep); werr != nil {
		return werr
	}
	var sum strings.Builder
	rep.Summary(&sum)
	if werr := os.WriteFile(base+".txt", []byte(sum.String()), 0o644); werr != nil {
		return fmt.Errorf("pgqcheck: writing %s.txt: %v; pass a writable --report folder", base, unwrapPath(werr))
	}
	fmt.Fprint(c.stdout, sum.String())
	fmt.Fprintf(c.stdout, "report: %s.json\n", base)
	if err != nil {
		return err
	}
	switch rep.Verdict {
	case verdictViolated:
		return &violation{}
	case verdictError:
		return &exitErr{exitError, "pgqcheck: run: the harness failed before a verdict (" + rep.HarnessErrors[0] + "); fix the environment and rerun"}
	}
	return nil
}

// newSaver prepares where cases are kept and switches to a scratch working directory. Paths
// given on the command line must be made absolute before this.
func newSaver(cmd, root string, keep bool) (*Saver, error) {
	if root == "" {
		r, ok := moduleRoot()
		if !ok {
			if keep {
				return nil, usageErrorf("%s: not inside the pgqcheck module, so failing cases would not be where go test replays them; run from the module or pass --corpus DIR", cmd)
			}
			r, _ = os.Getwd()
		}
		root = r
	}
	abs, err := filepath.Abs(root)
	if err == nil && keep {
		err = writableDir(filepath.Join(abs, "testdata"))
	}
	if err != nil {
		return nil, usageErrorf("%s: --corpus %s cannot be written (%v); pass the module root", cmd, root, err)
	}
	scratch, err := os.MkdirTemp("", "pgqcheck-scratch-")
	if err != nil {
		return nil, fmt.Errorf("pgqcheck: %s: cannot create a scratch folder: %v; check TMPDIR", cmd, unwrapPath(err))
	}
	if err := os.Chdir(scratch); err != nil {
		os.RemoveAll(scratch)
		return nil, fmt.Errorf("pgqcheck: %s: cannot enter the scratch folder: %v; check TMPDIR", cmd, unwrapPath(err))
	}
	return &Saver{Root: abs, Scratch: scratch, Keep: keep}, nil
}

func (s *Saver) close() {
	_ = os.Chdir(s.Root)
	os.RemoveAll(s.Scratch)
}

type campaign struct {
	c         *cli
	mode      Mode
	planSizes []int
	q         *sut.Queue
	workers   int
	seed      uint64
	duration  time.Duration
	keepGoing bool
	saver     *Saver
	tally     Tally
	clearLine string // erases the progress line before a message, on a terminal

	mu       sync.Mutex
	failures []*Failure
	harness  []string
	byProp   map[int]bool
	reason   string
	start    time.Time
}

// run starts the server and the workers, runs until told to stop, and returns the report. A
// non-nil error without a report means nothing ran (the environment failed first).
func (cp *campaign) run() (*Report, error) {
	c := cp.c
	soft, hard := c.sig.soft, c.sig.hard
	srv, err := c.startServer(soft)
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	fmt.Fprintf(c.stdout, "run: queue %s, mode %s, %d worker(s), seed %d, for %s\n", cp.q.Source, cp.mode.Name(), cp.workers, cp.seed, cp.duration)
	setRapid("rapid.checks", fmt.Sprint(roundChecks))
	setRapid("rapid.nofailfile", "false")

	hunters, cleanup, err := cp.startWorkers(soft, srv)
	defer cleanup()
	if err != nil {
		return nil, interrupted(soft, err)
	}

	cp.start = time.Now()
	cp.byProp = map[int]bool{}
	stop, stopAll := context.WithTimeout(soft, cp.duration)
	defer stopAll()

	if r, ok := hunters[0].(Replayer); ok {
		fs, err := r.ReplaySaved(hard)
		if len(fs) > 0 {
			fmt.Fprintf(c.stdout, "run: %d saved case(s) still fail\n", len(fs))
		}
		if cp.record(fs, err) && !cp.keepGoing {
			stopAll()
		}
	}

	tty := isTerminal(os.Stderr)
	if tty {
		cp.clearLine = "\r\033[K"
	}
	progressDone := make(chan struct{})
	var pwg sync.WaitGroup
	pwg.Add(1)
	go func() {
		defer pwg.Done()
		cp.progress(c.stderr, tty, progressDone)
	}()

	var wg sync.WaitGroup
	for _, h := range hunters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; stop.Err() == nil; n++ {
				fs, err := h.Round(hard, n)
				if hard.Err() != nil {
					return
				}
				if cp.record(fs, err) && (!cp.keepGoing || err != nil) {
					stopAll()
				}
			}
		}()
	}
	wg.Wait()
	close(progressDone)
	pwg.Wait()

	rep := cp.report(srv)
	if len(cp.planSizes) > 0 && soft.Err() == nil {
		rep.setClaimCost(cp.measureClaimCost(hard, srv))
	}
	switch {
	case hard.Err() != nil:
		rep.StopReason, rep.Interrupted = "interrupted; the round in progress was abandoned", true
	case soft.Err() != nil:
		rep.StopReason, rep.Interrupted = "interrupted; stopped after the current round", true
	case cp.reason != "":
		rep.StopReason = cp.reason
	default:
		rep.StopReason = "duration reached"
	}
	return rep, nil
}

// measureClaimCost measures property 10 in a database of its own: the claim under EXPLAIN
// (ANALYZE, BUFFERS), rolled back, at each size of done rows.
func (cp *campaign) measureClaimCost(ctx context.Context, srv *pgserver.Server) *plan.Report {
	fmt.Fprintf(cp.c.stderr, "pgqcheck: measuring the claim's cost at %v done rows\n", cp.planSizes)
	fail := func(err error) *plan.Report {
		return &plan.Report{Queue: cp.q.Name, Source: cp.q.Source, Verdict: "not measured: " + err.Error()}
	}
	db, err := srv.CreateDatabase(ctx, "pgqcheck_plan_"+cp.q.Name)
	if err != nil {
		return fail(err)
	}
	defer db.Drop(context.Background())
	in, err := sut.Install(ctx, db.DSN, cp.q)
	if err != nil {
		return fail(err)
	}
	defer in.Close()
	r, err := plan.Measure(ctx, in, cp.planSizes)
	if err != nil {
		return fail(err)
	}
	return r
}

func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q is not a row count", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// startWorkers gives each worker a database, the installed queue and a hunter. cleanup undoes
// whatever was set up, also after a failure part-way.
func (cp *campaign) startWorkers(ctx context.Context, srv *pgserver.Server) ([]Hunter, func(), error) {
	var (
		hunters []Hunter
		undo    []func()
	)
	cleanup := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	for i := 0; i < cp.workers; i++ {
		db, err := srv.CreateDatabase(ctx, fmt.Sprintf("pgqcheck_run_%s_w%d", cp.q.Name, i))
		if err != nil {
			return nil, cleanup, err
		}
		undo = append(undo, func() { _ = db.Drop(context.Background()) })
		in, err := sut.Install(ctx, db.DSN, cp.q)
		if err != nil {
			return nil, cleanup, err
		}
		undo = append(undo, in.Close)
		h, err := cp.mode.Start(ctx, &Worker{Index: i, Queue: cp.q, In: in, Seed: cp.seed, Tally: &cp.tally, Saver: cp.saver})
		if err != nil {
			return nil, cleanup, err
		}
		undo = append(undo, h.Close)
		hunters = append(hunters, h)
	}
	return hunters, cleanup, nil
}

// record adds a round's findings and reports whether the campaign should stop.
func (cp *campaign) record(fs []*Failure, err error) bool {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	stop := false
	for _, f := range fs {
		at := f.foundAt
		if at.IsZero() {
			at = time.Now()
		}
		f.FoundAfterS = max(0, at.Sub(cp.start).Seconds())
		if cp.keepGoing && cp.byProp[f.Property] && !f.Known {
			// One kept case per property is enough to act on; more would only repeat it.
			if f.ReplayFile != "" {
				os.Remove(f.ReplayFile)
			}
			continue
		}
		cp.byProp[f.Property] = true
		cp.failures = append(cp.failures, f)
		fmt.Fprintf(cp.c.stderr, "%spgqcheck: worker %d found a violation: %s\n", cp.clearLine, f.Worker, f.Verdict)
		if cp.reason == "" {
			cp.reason = "violation found"
		}
		stop = true
	}
	if err != nil {
		cp.harness = append(cp.harness, oneLine(err.Error()))
		if cp.reason == "" || cp.reason == "violation found" {
			cp.reason = "harness error"
		}
		stop = true
	}
	return stop
}

func (cp *campaign) report(srv *pgserver.Server) *Report {
	t := cp.tally.Snapshot()
	elapsed := time.Since(cp.start)
	rep := &Report{
		Format:        reportFormat,
		Tool:          "pgqcheck run",
		Started:       cp.start.UTC(),
		Finished:      time.Now().UTC(),
		ElapsedS:      elapsed.Seconds(),
		Requested:     cp.duration.String(),
		Backend:       string(srv.Backend),
		ServerVersion: srv.Version,
		Where:         srv.Where,
		Queue:         QueueInfo{Name: cp.q.Name, Source: cp.q.Source, Dir: cp.q.Dir(), Order: string(cp.q.Order)},
		Mode:          cp.mode.Name(),
		Workers:       cp.workers,
		Seed:          cp.seed,
		ReplayRoot:    cp.saver.Root,
		Checks:        t.Checks,
		Ops:           t.Ops,
		Histories:     t.Histories,
		ShrinkRuns:    t.ShrinkRuns,
		Counts:        t.Counts,
		Failures:      cp.failures,
		HarnessErrors: cp.harness,
	}
	if s := elapsed.Seconds(); s > 0 {
		rep.ChecksPerS = float64(t.Checks) / s
		rep.OpsPerS = float64(t.Ops) / s
	}
	if rep.Failures == nil {
		rep.Failures = []*Failure{}
	}
	rep.fillProperties(cp.mode.Properties())
	rep.decideVerdict()
	return rep
}

// progress prints the campaign's state: a line rewritten in place on a terminal, a plain line
// every few seconds otherwise (logs, CI).
func (cp *campaign) progress(w io.Writer, tty bool, done <-chan struct{}) {
	every := 10 * time.Second
	if tty {
		every = 250 * time.Millisecond
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	line := func() string {
		t := cp.tally.Snapshot()
		el := time.Since(cp.start)
		cp.mu.Lock()
		nf := len(cp.failures)
		cp.mu.Unlock()
		s := fmt.Sprintf("pgqcheck: %s/%s  checks %s  ops %s (%.0f/s)  histories %s  failures %d",
			el.Round(time.Second), cp.duration, num(t.Checks), num(t.Ops), float64(t.Ops)/max(el.Seconds(), 1e-3), num(t.Histories), nf)
		if t.Shrinking > 0 {
			s += "  (shrinking a failure)"
		}
		return s
	}
	for {
		select {
		case <-done:
			if tty {
				fmt.Fprintf(w, "\r\033[K%s\n", line())
			}
			return
		case <-tick.C:
			if tty {
				fmt.Fprintf(w, "\r\033[K%s", line())
			} else {
				fmt.Fprintln(w, line())
			}
		}
	}
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
