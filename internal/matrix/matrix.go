// Package matrix runs the walkthrough, each built-in queue's campaign and the kill table on several
// PostgreSQL servers, one row a server: one verdict per version.
package matrix

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/campaign"
	"github.com/pgqcheck/pgqcheck/internal/mutant"
	"github.com/pgqcheck/pgqcheck/internal/textfmt"
	"github.com/pgqcheck/pgqcheck/internal/walkthrough"
	"github.com/pgqcheck/pgqcheck/sut"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

// Config is what the version matrix runs on each server.
type Config struct {
	// Servers name where each column's Postgres comes from: an image for the docker backend, or
	// "local" for the machine's own binaries.
	Servers []string
	// Duration is each built-in queue's campaign (every mode in turn).
	Duration time.Duration
	Seed     uint64
	Mutants  []*mutant.Mutant
	Budget   time.Duration // the kill table's, per mutant and mode
	// DoneRows is where the claim's cost is read (property 10).
	DoneRows int
	Log      io.Writer
}

// Row is one server's results.
type Row struct {
	Server      string // what was asked for (an image, or local)
	Version     string // the server's own version
	Walkthrough string // held, or the first failed assertion
	// Verdicts are each built-in queue's campaign verdict, in sut.Builtins() order.
	Verdicts []string
	Caught   int // kill-table rows caught
	Rows     int // kill-table rows
	// Waits are the stress-mode claims seen waiting behind the chaos locker's row lock, per
	// built-in queue, and the stress rounds those campaigns ran.
	Waits     []int64
	Histories []int64
	// ClaimCost is, per built-in queue, buffers and ms per claim at DoneRows done rows.
	ClaimCost []string
	Err       string
}

// Run runs, on each server, the walkthrough, a campaign per built-in queue (whose verdict,
// claim waits and claim cost it keeps) and the kill table.
func Run(ctx context.Context, cfg Config) []Row {
	var rows []Row
	for _, s := range cfg.Servers {
		if ctx.Err() != nil {
			break
		}
		rows = append(rows, matrixRow(ctx, cfg, s))
	}
	return rows
}

func matrixRow(ctx context.Context, cfg Config, server string) Row {
	row := Row{Server: server}
	logf := func(format string, args ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "matrix: %s: "+format+"\n", append([]any{server}, args...)...)
		}
	}
	o := pgserver.Options{Kind: string(pgserver.BackendDocker), Image: server, Log: cfg.Log}
	if server == string(pgserver.BackendLocal) {
		o = pgserver.Options{Kind: server, Log: cfg.Log}
	}
	srv, err := pgserver.Start(ctx, o)
	if err != nil {
		row.Err = textfmt.OneLine(err.Error())
		return row
	}
	defer srv.Close()
	row.Version = srv.Version

	seed := sut.MustBuiltin(sut.DefaultQueue)
	err = campaign.OnDatabase(ctx, srv, "pgqcheck_matrix_walkthrough", seed, func(in *sut.Installed, _ string) error {
		ev, err := walkthrough.Run(ctx, in, walkthrough.ServerOf(srv), walkthrough.Options{LockerSleep: time.Second})
		if err != nil {
			return err
		}
		row.Walkthrough = "held"
		if failed := ev.Failed(); len(failed) > 0 {
			row.Walkthrough = fmt.Sprintf("FAILED: %s (expected %s, got %s)", failed[0].Name, failed[0].Expected, failed[0].Actual)
		}
		return nil
	})
	if err != nil {
		row.Err = textfmt.OneLine(err.Error())
		return row
	}
	logf("walkthrough %s", row.Walkthrough)

	all, err := campaign.LookupModes("all")
	if err != nil {
		row.Err = err.Error()
		return row
	}
	for _, name := range sut.Builtins() {
		rep, err := campaign.Run(ctx, ctx, campaign.Config{Server: srv, Queue: sut.MustBuiltin(name), Mode: all, Workers: 1, Seed: cfg.Seed,
			Duration: cfg.Duration, ShrinkTime: 5 * time.Second, PlanSizes: []int{cfg.DoneRows}})
		if err != nil {
			row.Err = textfmt.OneLine(err.Error())
			return row
		}
		v := rep.Verdict
		if len(rep.Failures) > 0 {
			v += ": " + rep.Failures[0].Property.String()
		}
		row.Verdicts = append(row.Verdicts, v)
		row.Waits = append(row.Waits, rep.Counts.ClaimWaits)
		row.Histories = append(row.Histories, rep.Counts.StressRounds)
		row.ClaimCost = append(row.ClaimCost, costAt(rep, cfg.DoneRows))
		logf("%s %s (%d claim waits in %d stress rounds; claim cost %s)", name, v, rep.Counts.ClaimWaits, rep.Counts.StressRounds, row.ClaimCost[len(row.ClaimCost)-1])
		// A built-in queue is correct: what its campaign found is shown whole, since the
		// matrix keeps no case of its own.
		if len(rep.Failures) > 0 && cfg.Log != nil {
			rep.Summary(cfg.Log)
		}
	}

	kt, err := campaign.HuntMutants(ctx, campaign.KillConfig{Server: srv, Mutants: cfg.Mutants, Budget: cfg.Budget, Seed: cfg.Seed})
	if err != nil {
		row.Err = textfmt.OneLine(err.Error())
		return row
	}
	row.Rows = len(kt.Rows)
	for _, r := range kt.Rows {
		if r.Caught {
			row.Caught++
		}
	}
	logf("mutants %d/%d caught", row.Caught, row.Rows)
	return row
}

// costAt is a campaign's claim cost at n done rows: buffers and ms per claim.
func costAt(rep *campaign.Report, n int) string {
	c := rep.ClaimCost
	if c == nil || !c.Measurable {
		return "not measured"
	}
	for _, r := range c.Rows {
		if r.DoneRows == n {
			return fmt.Sprintf("%s / %.2f ms", textfmt.Thousands(r.Buffers), r.ExecMs)
		}
	}
	return "not measured"
}

// Print writes the matrix as a Markdown table, one row per server.
func Print(w io.Writer, rows []Row, doneRows int) {
	queues := sut.Builtins()
	head := []string{"server", "walkthrough"}
	for _, q := range queues {
		head = append(head, q)
	}
	head = append(head, "mutants caught", "claim waits in stress rounds ("+strings.Join(queues, " / ")+")",
		fmt.Sprintf("claim cost at %s done rows, buffers / ms (%s)", textfmt.Thousands(int64(doneRows)), strings.Join(queues, "; ")))
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
	for _, r := range rows {
		if r.Err != "" {
			fmt.Fprintf(w, "| %s (%s) | error: %s |\n", r.Server, r.Version, r.Err)
			continue
		}
		cells := []string{fmt.Sprintf("PostgreSQL %s (%s)", textfmt.FirstWord(r.Version), r.Server), r.Walkthrough}
		cells = append(cells, r.Verdicts...)
		var waits []string
		for i, n := range r.Waits {
			waits = append(waits, fmt.Sprintf("%d in %d", n, r.Histories[i]))
		}
		cells = append(cells, fmt.Sprintf("%d of %d", r.Caught, r.Rows), strings.Join(waits, " / "), strings.Join(r.ClaimCost, "; "))
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
}

// Problems lists what did not hold, one item per server and result.
func Problems(rows []Row) []string {
	var out []string
	for _, r := range rows {
		switch {
		case r.Err != "":
			out = append(out, r.Server+": "+r.Err)
			continue
		case r.Walkthrough != "held":
			out = append(out, r.Server+": walkthrough "+r.Walkthrough)
		}
		for i, v := range r.Verdicts {
			if v != campaign.VerdictHeld {
				out = append(out, fmt.Sprintf("%s: %s %s", r.Server, sut.Builtins()[i], v))
			}
		}
		if r.Caught != r.Rows {
			out = append(out, fmt.Sprintf("%s: %d of %d mutant rows caught", r.Server, r.Caught, r.Rows))
		}
	}
	return out
}
