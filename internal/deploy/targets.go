package deploy

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/modroot"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// River's horizons, from its source (v0.47.0 to v0.51.2): a stuck job is one whose attempt
// began RescueStuckJobsAfter ago (an hour by default); the leader's rescuer looks for them
// every 30 s (maintenance.JobRescuerIntervalDefault, not a setting of the client), and makes
// them retryable; the scheduler makes a retryable job available within its 5 s interval.
const (
	riverRescueDefault  = time.Hour
	riverRescuerEvery   = 30 * time.Second
	riverSchedulerEvery = 5 * time.Second
)

// riverShape is what River promises, as the checks judge a deployment of it: its attempt
// counter also counts fetches no handler began, so the suite numbers each job's executions
// itself; a completion (JobCompleteTx, and the executor's own) sets the state of a running job
// by id, with no attempt to compare, so fencing is not promised (the doc of
// Config.RescueStuckJobsAfter: "this can result in repeat or duplicate execution").
var riverShape = model.Shape{NoGeneration: true, Unfenced: true}

// riverTypical is a River user's typical settings: a short rescue horizon and job timeout, a
// retry policy and an attempt limit of their own, a quick poll.
var riverTypical = map[string]int64{"rescue_after_ms": 2000, "job_timeout_ms": 1000, "max_attempts": 3, "backoff_ms": 200,
	"fetch_poll_ms": 100, "max_workers": 4}

// river is River at one version, with its defaults or a user's typical settings.
func river(name, version, module, pkg string, typical, ignoreContext bool) Target {
	t := Target{Name: name, Source: "River " + version + " (github.com/riverqueue/river), its own client", Module: module, Package: pkg,
		Shape: riverShape, Settings: map[string]int64{"max_workers": 4}, Workers: 3, WorkMS: [2]int64{300, 900}, Scheduled: true}
	t.Lease, t.Horizon = riverRescueDefault, riverRescueDefault+riverRescuerEvery
	t.Window, t.Patience = 30*time.Second, 20*time.Second
	t.MaxAttempts = 25 // River's MaxAttemptsDefault
	if typical {
		t.Name += "-typical"
		t.Source += " with a user's typical settings (RescueStuckJobsAfter 2s, JobTimeout 1s, 3 attempts, a doubling retry from 200ms)"
		t.Settings = riverTypical
		t.Lease = time.Duration(riverTypical["rescue_after_ms"]) * time.Millisecond
		t.Horizon = t.Lease + riverRescuerEvery + riverSchedulerEvery
		t.Window, t.Patience, t.Aim, t.MaxAttempts = 100*time.Second, 0, true, riverTypical["max_attempts"]
	}
	if ignoreContext {
		t.Name = strings.TrimSuffix(t.Name, "-typical") + "-ignorectx"
		t.Source += ", a handler that ignores its context"
		t.IgnoreContext = true
	}
	return t
}

// gueTarget is gue v5.8.0's WorkerPool: a job's claim is the transaction that locks its row,
// held until the job ends (the lease is the transaction), done jobs are deleted; gue keeps no
// attempt counter (error_count counts failures), so the suite numbers each job's executions.
func gueTarget() Target {
	return Target{Name: "gue", Source: "gue v5.8.0 (github.com/vgarvardt/gue/v5), its own WorkerPool", Module: "adapters", Package: "gue/worker",
		Shape: model.Shape{NoGeneration: true, TxBound: true, DoneDeleted: true, DeadDeleted: true},
		Lease: time.Hour, Horizon: 2 * time.Second, Settings: map[string]int64{"pool_size": 2}, Workers: 3,
		WorkMS: [2]int64{100, 300}, Window: 10 * time.Second, Scheduled: true}
}

// neoqTarget is neoq v0.72.2's postgres backend with a handler Start runs: a job is locked in
// a transaction of neoq's own, open while the handler runs, which commits the job's status
// after it returns (the lease is that transaction); processed rows are kept; neoq counts
// retries, not attempts, so the suite numbers each job's executions. The handler's effect goes
// to the run's HTTP destination, neoq's transaction being out of its reach.
func neoqTarget() Target {
	return Target{Name: "neoq", Source: "neoq v0.72.2 (github.com/acaloiaro/neoq), its own postgres backend", Module: "adapters/neoq", Package: "worker",
		Shape: model.Shape{NoGeneration: true, TxBound: true}, Lease: time.Hour, Horizon: 2 * time.Second,
		Settings: map[string]int64{"pending_check_ms": 200, "job_timeout_ms": 30000, "concurrency": 2}, Workers: 3,
		WorkMS: [2]int64{100, 300}, Window: 10 * time.Second, Scheduled: true, External: true}
}

// goqiteTarget is maragu.dev/goqite v0.4.0 on PostgreSQL with its job Runner: a receive moves
// a message's timeout ahead (its visibility timeout, here 1 s, which the Runner extends every
// 800 ms while the job runs), the Runner deletes it by id once the job returns nil (no
// receipt to present: a stale worker's delete is not refused), and a message received
// max_receive times is received no more. Its job function is handed the body alone.
func goqiteTarget() Target {
	return Target{Name: "goqite", Source: "goqite v0.4.0 (maragu.dev/goqite) on PostgreSQL, its own job Runner", Module: "adapters/goqite", Package: "worker",
		Shape: model.Shape{NoGeneration: true, Unfenced: true, DoneDeleted: true}, Lease: time.Second, Horizon: time.Second,
		Settings: map[string]int64{"timeout_ms": 1000, "extend_ms": 1000, "max_receive": 5, "limit": 2}, Workers: 3,
		WorkMS: [2]int64{100, 300}, Window: 10 * time.Second, Scheduled: true, External: true, ByKey: true}
}

// libraries are the targets that run a queue library's own client.
func libraries() []Target {
	var out []Target
	for _, v := range []struct{ name, version, module, pkg string }{
		{"river051", "v0.51.2", "adapters", "river051/worker"},
		{"river047", "v0.47.0", "adapters/river047", "worker"},
	} {
		for _, set := range [][2]bool{{false, false}, {true, false}, {true, true}} {
			out = append(out, river(v.name, v.version, v.module, v.pkg, set[0], set[1]))
		}
	}
	return append(out, gueTarget(), neoqTarget(), goqiteTarget())
}

// Library is the library target named name.
func Library(name string) (Target, error) {
	var names []string
	for _, t := range libraries() {
		if t.Name == name {
			return t, nil
		}
		names = append(names, t.Name)
	}
	sort.Strings(names)
	return Target{}, fmt.Errorf("no deployment %q; use one of %s, or sql (with --sql-dir or --queue)", name, strings.Join(names, ", "))
}

// Libraries names every library target.
func Libraries() []string {
	var names []string
	for _, t := range libraries() {
		names = append(names, t.Name)
	}
	return names
}

// Python is the seed's queue, its workers the Python worker (adapters/python/sqlworker.py,
// run by python, an interpreter with psycopg 3), the other roles the Go SQL worker's: a worker
// in a second language, judged by the same protocol.
func Python(python string) (Target, error) {
	root, ok := modroot.Here()
	if !ok {
		return Target{}, fmt.Errorf("pgqcheck: the Python worker is run from the pgqcheck module's source, and the working directory is not inside it")
	}
	q, err := sut.LoadDir(filepath.Join(root, "sut", "queues", "seed"))
	if err != nil {
		return Target{}, err
	}
	t, err := SQLTarget(q, time.Second)
	if err != nil {
		return t, err
	}
	t.Name, t.Source = "python", "the seed's queue, worked by the Python worker (adapters/python/sqlworker.py, psycopg 3)"
	t.WorkCommand = []string{python, filepath.Join(root, "adapters", "python", "sqlworker.py")}
	return t, nil
}

// FindPython is the first interpreter that imports psycopg: Debian's, then python3 on PATH.
func FindPython() (string, error) {
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if path, err := exec.LookPath(p); err == nil && exec.Command(path, "-c", "import psycopg").Run() == nil {
			return path, nil
		}
	}
	return "", fmt.Errorf("pgqcheck: the Python worker needs python3 with psycopg 3; install it (Debian: apt-get install python3-psycopg)")
}
