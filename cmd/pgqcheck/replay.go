package main

import (
	"fmt"
	"os"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/campaign"
	"github.com/pgqcheck/pgqcheck/internal/textfmt"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

const replayDetails = `FILE is a saved case: an .ops program (testdata/programs/found/*.ops, or any program as
pgqcheck prints them), a FuzzScheduled input (fuzz/testdata/fuzz/FuzzScheduled/*), or a history
JSON from a report folder. It is judged against the queue that --sql-dir, PGQCHECK_SQL_DIR or
--queue names (default the built-in seed), not against the queue named in the file's header:
that is where the case was found. A sequential program runs on a fresh database beside the
model, a scheduled one on concurrent sessions in its interleaving; a fuzz input replays one
scheduled run from its choices; a history is re-checked without Postgres.
The verdict and the program with the queue's answers are printed; exit status 1 if a property
breaks.
`

func runReplay(c *cli, args []string) error {
	fs := c.flags("replay")
	var qf queueFlags
	qf.add(fs)
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("replay: pass exactly one saved case (got %d); pgqcheck replay -h", len(pos))
	}
	q, err := qf.load("replay")
	if err != nil {
		return err
	}
	var srv *pgserver.Server
	defer func() {
		if srv != nil {
			srv.Close()
		}
	}()
	r, err := campaign.ReplayFile(c.sig.soft, func() (*pgserver.Server, error) {
		srv, err = c.startServer(c.sig.soft)
		return srv, err
	}, q, pos[0])
	if r == nil {
		return interrupted(c.sig.soft, inputError("replay", err))
	}
	return c.verdict("replay", r)
}

const checkHistoryDetails = `FILE is a history JSON written by a stress or scheduled run (history.json or job.json in
its report folder). It is checked again, without Postgres: every job's operations must have a
linearization consistent with the sequential specification, and a drained history must account
for every job. With -html, porcupine's timeline is written: of the failing job when the check
fails, else of the whole history when it is small enough to draw. With -measures, the run's
measures page is written first (any size of history): throughput and latency per operation
kind over time with the fault windows shaded, and the seed's measures (claim latency, ready-job
age, expired-running count, attempts per job, rejected completions); its measures are printed.
Exit status 1 if the history breaks a property.
`

func runCheckHistory(c *cli, args []string) error {
	fs := c.flags("check-history")
	html := fs.String("html", "", "write porcupine's timeline to this file")
	measures := fs.String("measures", "", "write the run's measures page (an HTML file) to this file")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("check-history: pass exactly one history file (got %d); pgqcheck check-history -h", len(pos))
	}
	if _, err := os.Stat(pos[0]); err != nil {
		return usageErrorf("check-history: %s cannot be read (%v); pass a history.json from a report folder", pos[0], campaign.PathCause(err))
	}
	out := ""
	if *html != "" {
		if out, err = writableFile("check-history", "-html", *html); err != nil {
			return err
		}
	}
	if *measures != "" {
		page, err := writableFile("check-history", "-measures", *measures)
		if err != nil {
			return err
		}
		start := time.Now()
		m, err := campaign.MeasuresPage(pos[0], page)
		if err != nil {
			return inputError("check-history", err)
		}
		took := time.Since(start)
		size := int64(0)
		if st, err := os.Stat(page); err == nil {
			size = st.Size()
		}
		fmt.Fprintf(c.stdout, "%smeasures: %s (%d statements, %.0f KB, read and drawn in %s)\n", m.Summary(), page, m.Ops, float64(size)/1024, took.Round(time.Millisecond))
	}
	r, err := campaign.ReplayHistory(pos[0], out)
	if r == nil {
		return inputError("check-history", err)
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "pgqcheck: check-history: no timeline written: %s\n", textfmt.OneLine(err.Error()))
	} else if out != "" {
		defer fmt.Fprintf(c.stdout, "timeline: %s\n", out)
	}
	return c.verdict("check-history", r)
}

// verdict prints a replayed case and turns it into the exit status.
func (c *cli) verdict(cmd string, r *campaign.Replayed) error {
	r.Print(c.stdout)
	switch {
	case r.Held():
		return nil
	case r.History != nil && r.History.Violation == nil:
		return &exitErr{exitError, "pgqcheck: " + cmd + ": the history is malformed (a harness bug, not a verdict on the queue); rerun the campaign that wrote it"}
	}
	return violated("")
}
