package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/campaign"
	"github.com/pgqcheck/pgqcheck/internal/matrix"
	"github.com/pgqcheck/pgqcheck/internal/modroot"
)

const matrixDetails = `For each server (--servers: docker images, or "local" for this machine's binaries), in turn:
the seed's walkthrough, a campaign of every mode for --duration on each built-in queue (its
verdict, the stress-mode claims seen waiting behind the chaos locker, the claim's cost at
--done-rows done rows) and the mutants' kill table. The table is printed as Markdown and
written to --out. The exit status is 1 if a server's results are not all held and caught.
`

func runMatrix(c *cli, args []string) error {
	fs := c.flags("matrix")
	servers := fs.String("servers", "pgqcheck/postgres:15,pgqcheck/postgres:17,pgqcheck/postgres:18.6", "comma-separated docker images (or local)")
	duration := fs.Duration("duration", 20*time.Second, "each built-in queue's campaign")
	budget := fs.Duration("budget", time.Minute, "the kill table's search time per mutant and mode")
	doneRows := fs.Int("done-rows", 100000, "done rows at which the claim's cost is read")
	out := fs.String("out", "pgqcheck-reports/matrix.md", "where to write the table")
	seed := fs.Uint64("seed", 0, "seed for the campaigns and searches (0: pick one and print it)")
	if err := c.parseFlags(fs, args, "matrix takes only flags"); err != nil {
		return err
	}
	if err := positive("matrix", "--duration", *duration); err != nil {
		return err
	}
	path, err := writableFile("matrix", "--out", *out)
	if err != nil {
		return err
	}
	mdir := filepath.Join("testdata", "mutants")
	if root, ok := modroot.Here(); ok {
		mdir = filepath.Join(root, mdir)
	}
	ms, err := campaign.SelectMutants(mdir, "")
	if err != nil {
		return inputError("matrix", err)
	}
	*seed = randomSeed(*seed)
	fmt.Fprintf(c.stdout, "matrix: servers %s, seed %d\n", *servers, *seed)
	rows := matrix.Run(c.sig.soft, matrix.Config{Servers: strings.Split(*servers, ","), Duration: *duration,
		Seed: *seed, Mutants: ms, Budget: *budget, DoneRows: *doneRows, Log: c.stdout})
	var table strings.Builder
	matrix.Print(&table, rows, *doneRows)
	fmt.Fprintf(c.stdout, "\n%s", table.String())
	if err := os.WriteFile(path, []byte(table.String()), 0o644); err != nil {
		return fmt.Errorf("pgqcheck: matrix: writing %s: %v", path, campaign.PathCause(err))
	}
	fmt.Fprintf(c.stdout, "matrix: %s\n", path)
	if c.sig.soft.Err() != nil {
		return &exitErr{exitError, "pgqcheck: matrix: interrupted; the table holds the servers that finished"}
	}
	if bad := matrix.Problems(rows); len(bad) > 0 {
		return violated("pgqcheck: matrix: " + strings.Join(bad, "; "))
	}
	return nil
}
