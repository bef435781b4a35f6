package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/campaign"
	"github.com/pgqcheck/pgqcheck/internal/modroot"
)

const mutantsDetails = `Each folder under --dir is a deliberately broken queue with mutant.json, {"bug": "...",
"expect": ["Prop"] and/or ["Linear"]}. Every mutant is installed in a fresh database and hunted
by every mode of the suites it expects, as go test demands them (Prop: sequential; Linear:
stress and scheduled), until the mode catches it or --budget runs out (a stress row also waits
for 100 dropped replies and cuts, up to ten budgets); the kill table shows
what caught it, how soon, and after how many property runs. Then every correct built-in queue
must pass --checks property runs. The exit status is 1 if a mutant survives a mode or a
correct queue fails. Nothing is saved under testdata/: a mutant's failure is the expected
outcome, not a regression.
`

func runMutants(c *cli, args []string) error {
	fs := c.flags("mutants")
	dir := fs.String("dir", filepath.Join("testdata", "mutants"), "folder of mutant folders (default: testdata/mutants here or in the module root)")
	filter := fs.String("run", "", "only the mutants whose folder name matches this regexp")
	budget := fs.Duration("budget", time.Minute, "search time per mutant and mode before it counts as surviving")
	checks := fs.Int("checks", 300, "property runs each correct built-in queue must pass")
	builtins := fs.Bool("builtins", true, "also require every correct built-in queue to pass")
	seed := fs.Uint64("seed", 0, "seed for the searches (0: pick one and print it)")
	shrink := fs.Duration("shrink-time", 0, "time rapid may spend shrinking each catch (a mutant only needs catching; 0 reports the first failing run)")
	if err := c.parseFlags(fs, args, "pass the folder with --dir"); err != nil {
		return err
	}
	if err := positive("mutants", "--budget", *budget); err != nil {
		return err
	}
	if *checks < 1 {
		return usageErrorf("mutants: --checks must be at least 1 (got %d)", *checks)
	}
	mdir := *dir
	if _, err := os.Stat(mdir); err != nil && !filepath.IsAbs(mdir) {
		if root, ok := modroot.Here(); ok {
			mdir = filepath.Join(root, mdir)
		}
	}
	ms, err := campaign.SelectMutants(mdir, *filter)
	if err != nil {
		return inputError("mutants", err)
	}
	*seed = randomSeed(*seed)

	ctx := c.sig.soft
	srv, err := c.startServer(ctx)
	if err != nil {
		return err
	}
	defer srv.Close()
	fmt.Fprintf(c.stdout, "mutants: %d from %s, budget %s each, seed %d\n\n", len(ms), mdir, *budget, *seed)
	cfg := campaign.KillConfig{Server: srv, Mutants: ms, Budget: *budget, Seed: *seed, ShrinkTime: *shrink, Log: c.stdout}
	if *builtins {
		cfg.QueueChecks = *checks
	}
	kt, err := campaign.HuntMutants(ctx, cfg)
	if err != nil {
		return &exitErr{exitError, "pgqcheck: mutants: interrupted before every mutant and queue ran; the databases were dropped"}
	}
	fmt.Fprintln(c.stdout, "\nkill table:")
	kt.Print(c.stdout)
	fmt.Fprintln(c.stdout)
	if errs := kt.Errors(); len(errs) > 0 {
		return &exitErr{exitError, "pgqcheck: mutants: the harness failed (" + errs[0] + "); fix the environment and rerun"}
	}
	sum, ok := kt.Summary()
	if !ok {
		return violated("pgqcheck: mutants: " + sum)
	}
	fmt.Fprintf(c.stdout, "mutants: %s\n", sum)
	return nil
}
