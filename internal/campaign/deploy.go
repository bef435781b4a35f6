package campaign

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/deploy"
	"github.com/pgqcheck/pgqcheck/internal/deploy/observed"
	"github.com/pgqcheck/pgqcheck/internal/mutant"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/textfmt"
	"github.com/pgqcheck/pgqcheck/internal/verdict"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// deployMode runs the queue as it is deployed: real worker processes of the SQL worker under
// process faults, each round one deployment run on the worker's database (internal/deploy).
// The kill table stalls workers alone, the fault every stale-worker bug needs; a campaign adds
// kills and cuts, and restarts where its rounds may crash the server.
type deployMode struct{}

func (deployMode) Name() string { return "deploy" }

func (deployMode) Properties() []model.Property { return deploy.Properties }

// deployLease is what a round's claims ask for, and deployWindow how long its faults last.
const (
	deployLease  = 400 * time.Millisecond
	deployWindow = 3 * time.Second
)

func (deployMode) Start(ctx context.Context, w *Worker) (Hunter, error) {
	t, err := deploy.SQLTarget(w.Queue, deployLease)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(w.Saver.Reports, "deploy")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %v", dir, PathCause(err))
	}
	progs, err := deploy.NewPrograms()
	if err != nil {
		return nil, err
	}
	faults := []deploy.FaultKind{deploy.Stall}
	if !w.CatchOnly {
		faults = append(faults, deploy.Kill, deploy.Cut)
		if w.Crash != nil {
			faults = append(faults, deploy.Restart)
		}
	}
	return &deployHunter{w: w, target: t, dir: dir, progs: progs, faults: faults}, nil
}

type deployHunter struct {
	w      *Worker
	target deploy.Target
	dir    string
	progs  *deploy.Programs
	faults []deploy.FaultKind
}

func (h *deployHunter) Close() { h.progs.Close() }

func (h *deployHunter) Round(ctx context.Context, n int) ([]*Failure, error) {
	begin := time.Now()
	seed := RoundSeed(h.w.Seed, h.w.Index, n)
	res, err := deploy.Run(ctx, deploy.Config{DB: h.w.In, Crash: h.w.Crash, Target: h.target, Window: deployWindow,
		Faults: h.faults, Seed: seed, ReportDir: h.dir, Programs: h.progs})
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	h.w.Tally.AddHistories(1)
	h.w.Tally.AddOps(int64(len(res.History.Ops)))
	for _, np := range res.Verdict.NotPromised {
		h.w.Tally.sawNotPromised(newFailure(deployFinding(h.w, np, res), "deploy", h.w.Index, n, seed))
	}
	if res.OK() {
		os.RemoveAll(res.Dir)
		return nil, nil
	}
	v := res.Verdict.Violation
	if res.Verdict.OK || v == nil {
		v = res.Observed.Findings[0].Violation
	}
	fl := newFailure(deployFinding(h.w, v, res), "deploy", h.w.Index, n, seed)
	fl.foundAt = begin.Add(res.Took)
	return []*Failure{fl}, h.w.Saver.keepHistory(fl, fl.finding, h.w.Queue)
}

// deployFinding is a deployment run's violation as every mode's findings read.
func deployFinding(w *Worker, v *model.Violation, res *deploy.Result) *verdict.Finding {
	return &verdict.Finding{Violation: v, Queue: w.Queue.Name, Source: w.Queue.Source, Mode: program.Mode(observed.Mode),
		Trace: res.Verdict.Explanation, ReportDir: res.Dir}
}

// checkDeployed runs the seed's queue as it is deployed, under every fault but a restart (the
// table's server is shared): a correct queue's row of the kill table, whose mutants include
// ones the deployment mode must catch.
func checkDeployed(ctx context.Context, cfg KillConfig, q *sut.Queue) QueueRow {
	row := QueueRow{Queue: q.Name + " (deployed)"}
	t, err := deploy.SQLTarget(q, deployLease)
	if err != nil {
		row.Err = textfmt.OneLine(err.Error())
		return row
	}
	dir, err := os.MkdirTemp("", "pgqcheck-deployed-")
	if err != nil {
		row.Err = textfmt.OneLine(err.Error())
		return row
	}
	defer os.RemoveAll(dir)
	res, err := deploy.Run(ctx, deploy.Config{Server: cfg.Server, Target: t, Window: deployWindow, Seed: cfg.Seed, ReportDir: dir,
		Faults: []deploy.FaultKind{deploy.Stall, deploy.Kill, deploy.Cut}})
	if err != nil {
		row.Err = textfmt.OneLine(err.Error())
		return row
	}
	row.Checks, row.Time, row.Passed = 1, res.Took, res.OK()
	if !row.Passed {
		row.Verdict = res.FirstText()
	}
	return row
}

// expectsDeploy reports whether some mutant of the table must be caught as deployed.
func expectsDeploy(ms []*mutant.Mutant) bool {
	for _, m := range ms {
		if m.Expects("Deploy") {
			return true
		}
	}
	return false
}
