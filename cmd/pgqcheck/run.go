package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/campaign"
	"github.com/pgqcheck/pgqcheck/internal/effectdest"
)

const runDetails = `A campaign: every worker gets a database of its own and runs rounds until the duration is up, a
violation is found (unless --keep-going) or Ctrl-C is pressed. With --mode all (the default) the
rounds take turns: sequential (the Prop state machine), stress (concurrent sessions and injected
faults, the history checked with porcupine) and scheduled (interleavings drawn by rapid). The
first Ctrl-C stops after the current round and still writes the report; a second abandons it.

The programs under testdata/programs/found/ are replayed first, against the queue judged here.
Every failure is saved as a case that stands alone, and the summary prints how to replay it:
sequential and scheduled programs as testdata/programs/found/*.ops (a scheduled run's choices
also as fuzz/testdata/fuzz/FuzzScheduled/found-*), stress histories as
testdata/histories/found-*.json. A concurrent failure also leaves a report folder
(history, the failing job's timeline) next to the report (JSON and .txt) in --report.
The same --seed and --workers repeat each worker's sequential and scheduled rounds.

--crash (with --mode stress and --workers 1) makes every stress round a crash round: during its
traffic the server is killed with SIGKILL and restarted on the same data directory, the
sessions reconnect and the traffic goes on; the history, with the crash and the restart in its
faults, is checked as any other, and also for what a crash must not undo (acknowledged enqueues
and completions, generations, leases on the database clock). The server then runs with fsync
and synchronous_commit on. It needs a server the suite owns: PGQCHECK_PG=local or docker.
`

func runCampaign(c *cli, args []string) error {
	fs := c.flags("run")
	duration := fs.Duration("duration", 10*time.Minute, "how long to search")
	workers := fs.Int("workers", max(1, runtime.NumCPU()/2), "workers, each with a database of its own")
	seed := fs.Uint64("seed", 0, "campaign seed (0: pick one and print it)")
	reportDir := fs.String("report", "pgqcheck-reports", "folder for the report JSON and its summary")
	modeName := fs.String("mode", campaign.AllModes, "how to search: "+campaign.AllModes+" (each in turn), or one or a comma-separated list of "+campaign.ModeNames())
	keepGoing := fs.Bool("keep-going", false, "keep searching after a violation (one saved case per property)")
	crash := fs.Bool("crash", false, "crash rounds: each stress round kills -9 the server once and restarts it (needs --mode stress, --workers 1, PGQCHECK_PG=local or docker)")
	shrink := fs.Duration("shrink-time", 30*time.Second, "time rapid may spend shrinking a failure before saving it")
	planSizes := fs.String("plan-sizes", "10000,100000", "done-row counts at which to measure the claim's cost (property 10) after the campaign; empty: skip")
	dest := fs.String("dest", "", "sequential modes: workers call a destination with each job's external effect between claim and completion, one of "+fmt.Sprint(effectdest.Modes)+" (property 17; empty: none)")
	root := fs.String("corpus", "", "module root under whose testdata/ failing cases are saved (default: the pgqcheck module above the working directory)")
	var qf queueFlags
	qf.add(fs)
	if err := c.parseFlags(fs, args, "run takes only flags (pgqcheck run -h)"); err != nil {
		return err
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
	mode, err := campaign.LookupModes(*modeName)
	if err != nil {
		return usageErrorf("run: %v", err)
	}
	if *crash && mode.Name() != "stress" {
		return usageErrorf("run: --crash runs stress rounds only (got --mode %s); use --mode stress --crash", mode.Name())
	}
	if *crash && *workers != 1 {
		if workersSet(fs) {
			return usageErrorf("run: --crash needs --workers 1 (got %d): a crash takes down the server every worker shares", *workers)
		}
		*workers = 1
	}
	if *dest != "" && !slices.Contains(effectdest.Modes, effectdest.Mode(*dest)) {
		return usageErrorf("run: --dest %q: want one of %v", *dest, effectdest.Modes)
	}
	q, err := qf.load("run")
	if err != nil {
		return err
	}
	repDir, err := filepath.Abs(*reportDir)
	if err == nil {
		err = campaign.WritableDir(repDir)
	}
	if err != nil {
		return usageErrorf("run: --report %s cannot be written (%v); pass a writable folder", *reportDir, err)
	}
	wd, _ := os.Getwd()
	corpus, err := campaign.CaseRoot(*root, wd)
	if err != nil {
		return inputError("run", err)
	}
	*seed = randomSeed(*seed)

	srv, err := c.startServerFor(c.sig.soft, *crash)
	if err != nil {
		return err
	}
	defer srv.Close()
	c.sig.onSoft("pgqcheck: stopping after the current round and writing the report (press Ctrl-C again to abandon the round)")
	rep, err := campaign.Run(c.sig.soft, c.sig.hard, campaign.Config{
		Server: srv, Queue: q, Mode: mode, Workers: *workers, Seed: *seed, Duration: *duration, KeepGoing: *keepGoing,
		ShrinkTime: *shrink, PlanSizes: sizes, Root: corpus, ReportDir: repDir, Crash: *crash, Dest: effectdest.Mode(*dest),
		Log: c.stdout, Progress: c.stderr, TTY: c.stderr == os.Stderr && isTerminal(os.Stderr),
	})
	if rep == nil {
		return interrupted(c.sig.soft, err)
	}
	path, err := rep.Write(repDir)
	if err != nil {
		return fmt.Errorf("pgqcheck: %v", err)
	}
	rep.Summary(c.stdout)
	fmt.Fprintf(c.stdout, "report: %s\n", path)
	switch rep.Verdict {
	case campaign.VerdictViolated:
		return violated("")
	case campaign.VerdictError:
		return &exitErr{exitError, "pgqcheck: run: the harness failed before a verdict (" + rep.HarnessErrors[0] + "); fix the environment and rerun"}
	}
	return nil
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

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// workersSet reports whether --workers was given on the command line.
func workersSet(fs *flag.FlagSet) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "workers" })
	return set
}
