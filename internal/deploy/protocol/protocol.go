// Package protocol is the deployment mode's worker protocol: how a worker process, written in
// any language, hears what to run (a Config in the environment) and tells what it did (Events,
// one JSON object a line, appended to the file the Config names). docs/deploy.md is its
// reference; this package is its Go side, for the harness that reads events and for the Go
// workers that write them.
//
// Every time in an event is the database's clock_timestamp(), read by the worker on its own
// connection, in microseconds since the Unix epoch: the harness never trusts a worker's clock.
package protocol

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"
)

// EnvConfig is the environment variable that carries a worker's Config, as JSON.
const EnvConfig = "PGQCHECK_DEPLOY"

// Config is what a worker process is told. Durations are whole milliseconds, so that a worker
// in any language reads them as integers.
type Config struct {
	// Role is what the process is started for: RoleSetup, RoleEnqueue, RoleWork or
	// RoleSnapshot.
	Role   string `json:"role"`
	DSN    string `json:"dsn"`    // the run's database (a worker's: through its own fault proxy)
	Events string `json:"events"` // the file to append events to
	Worker string `json:"worker"` // its name in the history (w1; w1/2 once restarted)
	Seed   uint64 `json:"seed"`   // the run's seed: work times are drawn from it (WorkFor)
	// Workload is the file of jobs an enqueuer enqueues, one Job a line.
	Workload string `json:"workload,omitempty"`
	// Queue is the queue folder a worker of a queue folder of SQL runs (or a built-in's name).
	Queue string `json:"queue,omitempty"`
	// LeaseMS is the lease a claim asks for, where the queue's claims take one.
	LeaseMS int64 `json:"lease_ms,omitempty"`
	// PollMS is how long an idle worker waits before it claims again.
	PollMS int64 `json:"poll_ms,omitempty"`
	// WorkMS bounds a handler's work: WorkFor draws each execution's in [WorkMS[0], WorkMS[1]].
	WorkMS [2]int64 `json:"work_ms"`
	// Concurrency is how many jobs a worker process runs at once, where its library has a
	// setting for it (0: the library's default, or one).
	Concurrency int `json:"concurrency,omitempty"`
	// IgnoreContext: the handler works on after its library cancels its context (a job
	// timeout, a shutdown), as a handler that never looks at its context does.
	IgnoreContext bool `json:"ignore_context,omitempty"`
	// EffectURL is the run's HTTP destination of business effects (internal/effectdest), for
	// a worker whose effect cannot commit with its completion.
	EffectURL string `json:"effect_url,omitempty"`
	// Settings are the library's own settings as the deployment names them (River's
	// rescue_after_ms, job_timeout_ms, max_attempts, ...).
	Settings map[string]int64 `json:"settings,omitempty"`
}

// The roles a deployment's program is started in.
const (
	// RoleSetup installs the queue's schema in the run's empty database, then exits.
	RoleSetup = "setup"
	// RoleEnqueue enqueues the workload's jobs, each at its time, reporting each enqueue as a
	// statement (EvSend, EvAnswer), then exits.
	RoleEnqueue = "enqueue"
	// RoleWork runs the queue's workers until SIGTERM, reporting every execution (EvStart,
	// EvEnd) and every statement it runs itself.
	RoleWork = "work"
	// RoleSnapshot reads every job's row and business effects (EvObserve, EvEffects), then
	// exits.
	RoleSnapshot = "snapshot"
)

// Job is one job of a workload: its payload's key, when the enqueuer enqueues it (from its
// start), and the run-at delay it asks for.
type Job struct {
	Key     string `json:"key"`
	AtMS    int64  `json:"at_ms"`
	DelayMS int64  `json:"delay_ms,omitempty"`
	// FailAttempts is how many of the job's first attempts the handler fails, where the
	// queue reports failures.
	FailAttempts int64 `json:"fail_attempts,omitempty"`
}

// Payload is the job's payload as enqueued: a JSON object with its key, which the handler
// reads back.
func (j Job) Payload() string {
	b, _ := json.Marshal(struct {
		Key          string `json:"key"`
		FailAttempts int64  `json:"fail_attempts,omitempty"`
	}{j.Key, j.FailAttempts})
	return string(b)
}

// ReadWorkload reads a workload file.
func ReadWorkload(path string) ([]Job, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("pgqcheck worker: workload: %v", err)
	}
	var out []Job
	for n, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var j Job
		if err := json.Unmarshal(line, &j); err != nil {
			return nil, fmt.Errorf("pgqcheck worker: %s:%d: not a job: %v", path, n+1, err)
		}
		out = append(out, j)
	}
	return out, nil
}

// WriteWorkload writes a workload file.
func WriteWorkload(path string, jobs []Job) error {
	var b bytes.Buffer
	for _, j := range jobs {
		line, err := json.Marshal(j)
		if err != nil {
			return err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// Lease is the lease a claim asks for.
func (c Config) Lease() time.Duration { return time.Duration(c.LeaseMS) * time.Millisecond }

// Poll is an idle worker's wait between claims.
func (c Config) Poll() time.Duration { return time.Duration(max(c.PollMS, 1)) * time.Millisecond }

// FromEnv reads a worker's Config from EnvConfig, with a one-line error naming what is wrong.
func FromEnv() (Config, error) {
	var c Config
	raw := os.Getenv(EnvConfig)
	if raw == "" {
		return c, fmt.Errorf("pgqcheck worker: %s is not set; a worker is started by pgqcheck's deployment mode, which passes its configuration there", EnvConfig)
	}
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		return c, fmt.Errorf("pgqcheck worker: %s is not a worker configuration: %v", EnvConfig, err)
	}
	if c.DSN == "" || c.Events == "" || c.Worker == "" {
		return c, fmt.Errorf("pgqcheck worker: %s must name dsn, events and worker", EnvConfig)
	}
	switch c.Role {
	case RoleSetup, RoleEnqueue, RoleWork, RoleSnapshot:
	default:
		return c, fmt.Errorf("pgqcheck worker: role %q; the roles are %s, %s, %s and %s", c.Role, RoleSetup, RoleEnqueue, RoleWork, RoleSnapshot)
	}
	return c, nil
}

// WorkFor is how long execution attempt of job works, drawn from the run's seed so that a
// replay's workers work as long as the run's did, in any language: a splitmix64 step of
// seed, job and attempt, reduced into [lo, hi] milliseconds.
func WorkFor(seed uint64, job, attempt int64, lo, hi int64) time.Duration {
	if hi <= lo {
		return time.Duration(lo) * time.Millisecond
	}
	x := seed ^ uint64(job)*0x9e3779b97f4a7c15 ^ uint64(attempt)*0xbf58476d1ce4e5b9
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return time.Duration(lo+int64(x%uint64(hi-lo+1))) * time.Millisecond
}

// The kinds of event.
const (
	// EvHello opens a worker's events: its pid and what it runs.
	EvHello = "hello"
	// EvSend is written just before a statement the worker runs itself is sent (Op names it):
	// a send without its answer is a statement whose outcome is unknown.
	EvSend = "send"
	// EvAnswer is the statement's answer, paired with its send by Seq.
	EvAnswer = "answer"
	// EvStart and EvEnd are a handler beginning and returning: one execution of a job.
	EvStart = "start"
	EvEnd   = "end"
	// EvObserve is one job's row as a snapshot read it, with the snapshot's readings (From,
	// To): State, Gen, Live (its lease), Attempts.
	EvObserve = "observe"
	// EvEffects is how many business effects of one job the business table holds (Rows), as
	// the snapshot read it.
	EvEffects = "effects"
)

// The statements a worker reports with EvSend and EvAnswer.
const (
	OpEnqueue  = "enqueue"
	OpClaim    = "claim"
	OpComplete = "complete"
	OpFail     = "fail"
)

// The results of an execution (EvEnd's Result).
const (
	ResultDone      = "done"      // the handler finished and its completion was accepted
	ResultRefused   = "refused"   // its completion changed nothing (the queue refused it)
	ResultFailed    = "failed"    // the handler returned an error; the queue retries or buries the job
	ResultCancelled = "cancelled" // the library cancelled it (a job timeout) and the handler returned
	ResultReturned  = "returned"  // the handler returned; the library completes the job on its own
)

// Event is one line of a worker's events file.
type Event struct {
	Ev  string `json:"ev"`
	PID int    `json:"pid"`
	// Hello's: the worker's name and what it runs.
	Worker string `json:"worker,omitempty"`
	Runs   string `json:"runs,omitempty"`
	// Send's and answer's: the pairing number, the statement, and what it named.
	Seq int64  `json:"seq,omitempty"`
	Op  string `json:"op,omitempty"`
	Job int64  `json:"job,omitempty"`
	// ID is the job's id where the queue's ids are not numbers (gue's ULIDs), in place of Job:
	// the history numbers them in the order they are first seen.
	ID string `json:"id,omitempty"`
	// Key is the workload's key of the job, where the worker is handed neither its id nor its
	// number (goqite's job functions get the message's body alone): the history finds the job
	// by the key its enqueue carried.
	Key string `json:"key,omitempty"`
	// Gen is the generation a claim returned or a completion presented, or the attempt the
	// queue gave an execution (start, end).
	Gen int64 `json:"gen,omitempty"`
	// Floor (send) is a database time no later than the send: the worker's latest reading.
	Floor int64 `json:"floor,omitempty"`
	// From and To (answer) are clock_timestamp() read just before and just after the
	// statement on its connection; 0 where a reading did not come back.
	From int64 `json:"from,omitempty"`
	To   int64 `json:"to,omitempty"`
	// An answer's: a claim found a job; the rows a completion or failure changed; the
	// statement's error; Lost: the answer never came back, so the outcome is unknown.
	Found bool   `json:"found,omitempty"`
	Rows  int64  `json:"rows,omitempty"`
	Err   string `json:"err,omitempty"`
	Lost  bool   `json:"lost,omitempty"`
	// Unsent: the statement never reached the server (its transaction failed before it, its
	// context ended first): it took no effect, and Err says why.
	Unsent bool `json:"unsent,omitempty"`
	// Payload is an enqueue's payload (its key, for the reader), and DelayMS the run-at delay
	// it asks for (send).
	Payload string `json:"payload,omitempty"`
	DelayMS int64  `json:"delay_ms,omitempty"`
	// At (start, end) is clock_timestamp() read when the handler began or returned; Claimed
	// (start) a database time no later than the claim that handed the job out, where the
	// worker knows one (the library's attempted_at).
	At      int64  `json:"at,omitempty"`
	Claimed int64  `json:"claimed,omitempty"`
	Result  string `json:"result,omitempty"`
	// An observation's: the job's state (ready, running, done, dead), whether its lease is
	// live, and its attempts.
	State    string `json:"state,omitempty"`
	Live     bool   `json:"live,omitempty"`
	Attempts int64  `json:"attempts,omitempty"`
}

// Micros is a database time as events carry it.
func Micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// Read reads a worker's events. A last line cut short (the worker was killed while writing
// it) is dropped; any other line that is not an event is an error naming the line.
func Read(path string) ([]Event, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // the worker died before it wrote anything
	}
	if err != nil {
		return nil, err
	}
	// Each event is written whole with one write: only the last line can be cut short.
	if i := bytes.LastIndexByte(b, '\n'); i < len(b)-1 {
		b = b[:i+1]
	}
	var out []Event
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("%s:%d: not an event of the worker protocol: %v", path, n, err)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}
