package main

import (
	"fmt"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/campaign"
	"github.com/pgqcheck/pgqcheck/internal/walkthrough"
	"github.com/pgqcheck/pgqcheck/sut"
)

// defaultEvidence is where the walkthrough's evidence goes unless -o says otherwise.
const defaultEvidence = "pgqcheck-evidence/walkthrough.json"

const walkthroughDetails = `The seed's walkthrough, step for step, on a fresh database: two jobs; a manual-locker
session holds job 1 in pg_sleep; a claim returns 2|1; after the locker rolls back a claim
returns 1|1; job 1's lease is expired and a claim returns 1|2; completion with generation 1
changes 0 rows and with generation 2 changes 1 row. Two more scenarios end the locker with
pg_cancel_backend and pg_terminate_backend. Every statement, output, assertion and timing is
written to the evidence file; the exit status is 1 if any assertion failed.
`

func runWalkthrough(c *cli, args []string) error {
	fs := c.flags("walkthrough")
	out := fs.String("o", defaultEvidence, "where to write the evidence JSON")
	sleep := fs.Duration("locker-sleep", time.Second, "how long the main scenario's locker holds job 1 in pg_sleep (the seed sleeps 5s)")
	var qf queueFlags
	qf.add(fs)
	if err := c.parseFlags(fs, args, "the evidence path goes after -o"); err != nil {
		return err
	}
	if err := positive("walkthrough", "--locker-sleep", *sleep); err != nil {
		return err
	}
	q, err := qf.load("walkthrough")
	if err != nil {
		return err
	}
	path, err := writableFile("walkthrough", "-o", *out)
	if err != nil {
		return err
	}

	ctx := c.sig.soft
	srv, err := c.startServer(ctx)
	if err != nil {
		return err
	}
	defer srv.Close()
	var ev *walkthrough.Evidence
	err = campaign.OnDatabase(ctx, srv, "pgqcheck_walkthrough", q, func(in *sut.Installed, db string) (err error) {
		fmt.Fprintf(c.stdout, "walkthrough: queue %s, database %s\n", q.Source, db)
		ev, err = walkthrough.Run(ctx, in, walkthrough.ServerOf(srv), walkthrough.Options{LockerSleep: *sleep, Log: c.stdout})
		return err
	})
	if ev != nil {
		if werr := writeJSON(path, ev); werr != nil {
			return werr
		}
		fmt.Fprintf(c.stdout, "evidence: %s\n", path)
	}
	if err != nil {
		return interrupted(ctx, err)
	}
	if failed := ev.Failed(); len(failed) > 0 {
		return violated(fmt.Sprintf("pgqcheck: walkthrough: %d assertion(s) failed, first %q (expected %s, got %s); see %s", len(failed), failed[0].Name, failed[0].Expected, failed[0].Actual, path))
	}
	fmt.Fprintf(c.stdout, "walkthrough: every assertion held (%d scenarios, %.0f ms)\n", len(ev.Scenarios), ev.ElapsedMS)
	return nil
}

func writeJSON(path string, v any) error {
	if err := campaign.WriteJSON(path, v); err != nil {
		return fmt.Errorf("pgqcheck: %v", err)
	}
	return nil
}
