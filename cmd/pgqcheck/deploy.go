package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/deploy"
)

const deployArgs = "TARGET... [--duration 2m] [--faults all] [--workers N] [--window W] [--seed S] [--report DIR] [--keep-going] [--shrink 5m] [--table OUT.md --keep DIR] | --replay RUN.json"

const deployDetails = `Judges a queue as it is deployed: its real workers in processes of their own, an enqueuer,
and faults from outside: stall (SIGSTOP, then SIGCONT beyond the lease or rescue horizon),
kill (SIGKILL with jobs in hand, a new worker later), cut (the worker's connections cut at its
fault proxy, and refused a while) and restart (the server killed and started again). The
fault times are drawn from the seed. What the workers report becomes the history every mode's
checks read, and the checks of observed executions come on top (docs/deploy.md).

TARGET is a queue library's deployment, sql for a queue folder (--sql-dir, or --queue for a
built-in), or python (the seed's queue worked by the Python worker): ` + "%s" + `.

Runs follow each other, each with its own seed and database, until --duration is up (at least
one), stopping at the first violation unless --keep-going; each prints one line, and the end a
verdict table of all of them. A run's report folder holds its run.json, which --replay runs
again (the same workload under the same fault schedule); --shrink looks for the fewest faults
that still break the first violation's promise, each try a run of its own.

Several targets run one after another, each with the same seed; --table writes their verdict
table in markdown (faults injected, executions observed, effects counted, the properties broken
and measured, the time to the first violation), and --keep copies each first violation's
replay (run.json, deploy.txt, its timeline) into a folder of its own.

Restart faults need a server this command owns (PGQCHECK_PG=local or docker); the worker
programs are built from this checkout with the go command.
`

func runDeploy(c *cli, args []string) error {
	fs := c.flags("deploy")
	duration := fs.Duration("duration", 0, "how long to keep starting runs (0: one run)")
	window := fs.Duration("window", 0, "each run's window of faults and enqueues (0: the target's)")
	faultSpec := fs.String("faults", "all", "the faults to draw: all, none, or a comma-separated list of stall, kill, cut, restart")
	workers := fs.Int("workers", 0, "worker processes (0: the target's)")
	seed := fs.Uint64("seed", 0, "campaign seed (0: pick one and print it)")
	reportDir := fs.String("report", "pgqcheck-reports", "folder for the runs' report folders")
	keepGoing := fs.Bool("keep-going", false, "keep starting runs after a violation")
	shrink := fs.Duration("shrink", 0, "time to spend shrinking the first violation's fault schedule (0: none)")
	replay := fs.String("replay", "", "a run's run.json to run again, instead of TARGET")
	tableOut := fs.String("table", "", "write the targets' verdict table, in markdown, to this file")
	keep := fs.String("keep", "", "copy each first violation's replay (run.json, deploy.txt, timeline.html) into this folder")
	var qf queueFlags
	qf.add(fs)
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if *replay != "" {
		if len(pos) > 0 {
			return usageErrorf("deploy: --replay runs the saved run's own target; drop %q", pos[0])
		}
		return c.deployReplay(*replay, *reportDir)
	}
	names := append([]string{"sql", "python"}, deploy.Libraries()...)
	if len(pos) == 0 {
		return usageErrorf("deploy: name a target, one of %s (pgqcheck deploy -h)", strings.Join(names, ", "))
	}
	var targets []deploy.Target
	for _, name := range pos {
		t, err := c.deployTarget(name, &qf)
		if err != nil {
			return err
		}
		targets = append(targets, t)
	}
	faults, err := deploy.ParseFaults(*faultSpec)
	if err != nil {
		return usageErrorf("deploy: --faults: %v", err)
	}
	if *duration < 0 || *window < 0 || *shrink < 0 || *workers < 0 {
		return usageErrorf("deploy: --duration, --window, --shrink and --workers cannot be negative")
	}
	if *tableOut != "" {
		if _, err := writableFile("deploy", "--table", *tableOut); err != nil {
			return err
		}
	}
	ctx := c.sig.soft
	srv, err := c.startServerFor(ctx, slices.Contains(faults, deploy.Restart))
	if err != nil {
		return err
	}
	defer srv.Close()
	s := randomSeed(*seed)
	var sums []*deploy.Summary
	kept := map[string]string{}
	for _, t := range targets {
		fmt.Fprintf(c.stdout, "pgqcheck deploy %s: seed %d, faults %s\n", t.Name, s, *faultSpec)
		sum, err := deploy.RunRounds(ctx, deploy.Rounds{Server: srv, Target: t, Duration: *duration, Window: *window, Workers: *workers,
			Faults: faults, Seed: s, KeepGoing: *keepGoing, ReportDir: *reportDir, Shrink: *shrink, Log: c.stdout})
		if err != nil {
			return interrupted(ctx, err)
		}
		sum.Print(c.stdout)
		fmt.Fprintln(c.stdout)
		sums = append(sums, sum)
		if *keep != "" {
			if kept[t.Name], err = sum.Keep(*keep); err != nil {
				return err
			}
		}
	}
	if *tableOut != "" {
		var b strings.Builder
		deploy.Markdown(&b, sums, kept)
		if err := os.WriteFile(*tableOut, []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	for _, sum := range sums {
		if !sum.OK() {
			return violated("")
		}
	}
	return nil
}

// deployTarget is the target a command line names.
func (c *cli) deployTarget(name string, qf *queueFlags) (deploy.Target, error) {
	if name == "python" {
		python, err := deploy.FindPython()
		if err != nil {
			return deploy.Target{}, err
		}
		return deploy.Python(python)
	}
	if name != "sql" {
		if qf.sqlDir != "" || qf.name != "" {
			return deploy.Target{}, usageErrorf("deploy: --sql-dir and --queue choose the queue of the sql target; %s runs its library's own", name)
		}
		t, err := deploy.Library(name)
		if err != nil {
			return t, usageErrorf("deploy: %v", err)
		}
		return t, nil
	}
	q, err := qf.load("deploy")
	if err != nil {
		return deploy.Target{}, err
	}
	t, err := deploy.SQLTarget(q, time.Second)
	if err != nil {
		return t, usageErrorf("deploy: %v", strings.TrimPrefix(err.Error(), "pgqcheck: "))
	}
	return t, nil
}

// deployReplay runs a saved run again.
func (c *cli) deployReplay(path, reportDir string) error {
	spec, err := deploy.LoadSpec(path)
	if err != nil {
		return usageErrorf("deploy: --replay %s: %v", path, err)
	}
	ctx := c.sig.soft
	restart := false
	for _, f := range spec.Schedule {
		restart = restart || f.Kind == deploy.Restart
	}
	srv, err := c.startServerFor(ctx, restart)
	if err != nil {
		return err
	}
	defer srv.Close()
	res, err := deploy.Replay(ctx, srv, path, reportDir)
	if err != nil {
		return interrupted(ctx, err)
	}
	res.Summary(c.stdout)
	fmt.Fprintf(c.stdout, "\n%s", res.TableText())
	if !res.OK() {
		return violated("")
	}
	return nil
}

// deployTargets lists the targets, for -h.
func deployTargets() string {
	return strings.Join(append([]string{"sql", "python"}, deploy.Libraries()...), ", ")
}
