// Package walkthrough reproduces the seed article's walkthrough against an installed queue and
// records it as evidence: every statement with its SQL text and output, every assertion with
// what was expected and what came back, and the server it ran on.
//
// The main scenario is the seed's, step for step: two jobs; a manual-locker session holds job 1's
// row lock while sleeping in pg_sleep; the harness waits until pg_stat_activity shows it
// sleeping; a claim returns job 2 (the locked row is skipped); after the locker rolls back a
// claim returns job 1; job 1's lease is expired and a claim reclaims it as generation 2; a
// completion with generation 1 changes nothing and one with generation 2 changes one row.
// Two more scenarios end the locker with pg_cancel_backend and pg_terminate_backend and record
// when the row becomes claimable again. A cancel aborts the locker's transaction, and Postgres
// releases the row lock at that abort, while the client's transaction block stays open (in
// the failed state) until it rolls back: the evidence shows a claim taking the row in between.
package walkthrough

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgqcheck/pgqcheck/internal/textfmt"
	"github.com/pgqcheck/pgqcheck/sut"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

// The seed's fixture.
const (
	Payload1 = `{"order_id":"ord-1"}`
	Payload2 = `{"order_id":"ord-2"}`
	// Lease is the seed's claim lease.
	Lease = 30 * time.Second
	// LockerName is the application_name the seed gives its lock holder.
	LockerName = "manual-locker"
)

// Server says where the walkthrough ran; it is copied into the evidence.
type Server struct {
	Backend string `json:"backend"`
	Version string `json:"server_version"`
	Where   string `json:"where"`
}

// ServerOf describes a harness server.
func ServerOf(s *pgserver.Server) Server {
	return Server{Backend: string(s.Backend), Version: s.Version, Where: s.Where}
}

// Options tune a run. The zero value is the default.
type Options struct {
	// LockerSleep is how long the main scenario's locker holds job 1 in pg_sleep before it rolls
	// back (the seed sleeps 5 s). The claim that must skip the row runs while it sleeps, and
	// the evidence checks the locker was still sleeping when that claim returned, so a shorter
	// sleep cannot pass by accident. Default 1 s.
	LockerSleep time.Duration
	// Log, when set, receives one line per statement and assertion as they happen.
	Log io.Writer
}

// Evidence is the record of one run, written as JSON.
type Evidence struct {
	Tool    string `json:"tool"`
	Article string `json:"article"`
	Server
	Queue     string        `json:"queue"`
	Started   time.Time     `json:"started"`
	ElapsedMS float64       `json:"elapsed_ms"`
	Passed    bool          `json:"passed"`
	Scenarios []*Scenario   `json:"scenarios"`
	Timings   []NamedTiming `json:"timings"`
}

// NamedTiming is a duration worth reading on its own (a claim that had to skip a lock).
type NamedTiming struct {
	Name string  `json:"name"`
	MS   float64 `json:"ms"`
}

// Scenario is one experiment on a freshly reset queue.
type Scenario struct {
	Name       string       `json:"name"`
	Title      string       `json:"title"`
	Steps      []*Step      `json:"steps"`
	Assertions []*Assertion `json:"assertions"`
	Notes      []string     `json:"notes,omitempty"`
	ElapsedMS  float64      `json:"elapsed_ms"`
	Passed     bool         `json:"passed"`
}

// Step is one statement as a session ran it.
type Step struct {
	Session   string   `json:"session"`
	SQL       string   `json:"sql"`
	Params    []string `json:"params,omitempty"`
	Output    string   `json:"output"`
	Error     string   `json:"error,omitempty"`
	AtMS      float64  `json:"at_ms"` // since the scenario began
	ElapsedMS float64  `json:"elapsed_ms"`
}

// Assertion is one expected result next to the actual one.
type Assertion struct {
	Name     string `json:"name"`
	Expected string `json:"expected"`
	Actual   string `json:"actual"`
	Pass     bool   `json:"pass"`
}

// Failed lists the assertions that did not hold, across scenarios.
func (e *Evidence) Failed() []*Assertion {
	var out []*Assertion
	for _, s := range e.Scenarios {
		for _, a := range s.Assertions {
			if !a.Pass {
				out = append(out, a)
			}
		}
	}
	return out
}

// Scenario returns the scenario with the given name, or nil.
func (e *Evidence) Scenario(name string) *Scenario {
	for _, s := range e.Scenarios {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Assertion returns the scenario's assertion with the given name, or nil.
func (s *Scenario) Assertion(name string) *Assertion {
	for _, a := range s.Assertions {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// Scenario names.
const (
	ScenarioSeed      = "seed"
	ScenarioCancel    = "cancel"
	ScenarioTerminate = "terminate"
)

// Assertion names shared by the test and the command's output.
const (
	AssertSkipLocked   = "claim skips the locked job"
	AssertAfterRelease = "claim after the locker's lock is released returns the locked job"
	AssertAbortedOpen  = "the cancelled statement left the locker's transaction aborted but open (client status E)"
	AssertReclaim      = "claim after expiry reclaims job 1 as generation 2"
	AssertStaleFenced  = "completion with the old generation changes 0 rows"
	AssertCurrentWins  = "completion with the current generation changes 1 row"
)

// Run runs the scenarios on in's queue, resetting it before each: the seed's three, then the
// lifecycle's where the queue ships what they need (lifecycle.go). A failed assertion is
// recorded in the evidence (Passed false), not returned as an error; the error is for the
// harness failing (a lost connection, a session that never reached pg_sleep).
func Run(ctx context.Context, in *sut.Installed, srv Server, o Options) (*Evidence, error) {
	if in.Queue.Lock == "" {
		return nil, fmt.Errorf("pgqcheck: queue %s has no lock.sql; the walkthrough's locker needs it (lock.sql: $1 id -> locks that job's row FOR UPDATE)", in.Queue.Source)
	}
	if o.LockerSleep <= 0 {
		o.LockerSleep = time.Second
	}
	ev := &Evidence{
		Tool:    "pgqcheck walkthrough",
		Article: "PostgreSQL job queues with SKIP LOCKED and expiring leases",
		Server:  srv,
		Queue:   in.Queue.Source,
		Started: time.Now().UTC(),
		Passed:  true,
	}
	for _, sc := range append([]scenario{
		{ScenarioSeed, "the seed's walkthrough: skip a locked row, reclaim after expiry, fence the stale completion", seedScenario},
		{ScenarioCancel, "pg_cancel_backend on the locker: the cancel aborts its transaction, which frees the row before the client rolls back", cancelScenario},
		{ScenarioTerminate, "pg_terminate_backend on the locker: the lock goes with the backend", terminateScenario},
	}, lifecycleScenarios(in.Queue)...) {
		s := &Scenario{Name: sc.name, Title: sc.title}
		ev.Scenarios = append(ev.Scenarios, s)
		l := &lab{in: in, sc: s, ev: ev, o: o, start: time.Now()}
		if o.Log != nil {
			fmt.Fprintf(o.Log, "scenario %s: %s\n", s.Name, s.Title)
		}
		err := l.run(ctx, sc.run)
		s.ElapsedMS = ms(time.Since(l.start))
		sort.SliceStable(s.Steps, func(i, j int) bool { return s.Steps[i].AtMS < s.Steps[j].AtMS })
		s.Passed = err == nil
		for _, a := range s.Assertions {
			s.Passed = s.Passed && a.Pass
		}
		ev.Passed = ev.Passed && s.Passed
		if err != nil {
			ev.ElapsedMS = ms(time.Since(ev.Started))
			return ev, err
		}
	}
	ev.ElapsedMS = ms(time.Since(ev.Started))
	return ev, nil
}

// scenario is one experiment of the walkthrough, run on a freshly reset queue.
type scenario struct {
	name, title string
	run         func(context.Context, *lab) error
}

// lab is one scenario in progress: its sessions and what they recorded.
type lab struct {
	in    *sut.Installed
	sc    *Scenario
	ev    *Evidence
	o     Options
	start time.Time

	mu       sync.Mutex // steps are appended from the locker's goroutine too
	sessions []*sut.Session
	id1, id2 int64
}

func (l *lab) run(ctx context.Context, body func(context.Context, *lab) error) error {
	defer func() {
		for _, s := range l.sessions {
			s.Close()
		}
	}()
	if err := l.in.Reset(ctx); err != nil {
		return err
	}
	return body(ctx, l)
}

// session opens a connection; the lab session gets a lock timeout so that a claim which waits
// for the locker instead of skipping its row fails fast rather than hanging the walkthrough.
func (l *lab) session(ctx context.Context, name string) (*sut.Session, error) {
	o := sut.SessionOptions{StatementTimeout: 2 * time.Minute}
	if name == "lab" {
		o.LockTimeout = 2 * time.Second
	}
	s, err := l.in.Connect(ctx, name, o)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.sessions = append(l.sessions, s)
	l.mu.Unlock()
	return s, nil
}

// result is a statement's outcome: psql-style text (columns joined by |, rows by newlines, the
// command tag when there are no columns) and the error, if any.
type result struct {
	out string
	err error
}

// exec runs one statement on conn as session who, records it and returns its outcome.
func (l *lab) exec(ctx context.Context, who string, conn *pgx.Conn, sql string, args ...any) result {
	begin := time.Now()
	r := query(ctx, conn, sql, args...)
	l.record(who, sql, args, begin, r)
	return r
}

func query(ctx context.Context, conn *pgx.Conn, sql string, args ...any) result {
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		return result{err: err}
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return result{err: err}
		}
		cols := make([]string, len(vals))
		for i, v := range vals {
			cols[i] = cell(v)
		}
		lines = append(lines, strings.Join(cols, "|"))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return result{out: strings.Join(lines, "\n"), err: err}
	}
	if len(rows.FieldDescriptions()) == 0 {
		return result{out: rows.CommandTag().String()}
	}
	if len(lines) == 0 {
		return result{out: NoRows}
	}
	return result{out: strings.Join(lines, "\n")}
}

// NoRows is the output recorded for a query that returned no row (psql -At prints nothing).
const NoRows = "(0 rows)"

// cell formats a value as psql -At would.
func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case bool:
		if x {
			return "t"
		}
		return "f"
	case time.Time:
		return x.Format("2006-01-02 15:04:05.999999-07")
	case []byte:
		return string(x)
	}
	return fmt.Sprint(v)
}

func (l *lab) record(who, sql string, args []any, begin time.Time, r result) {
	st := &Step{
		Session:   who,
		SQL:       strings.TrimSpace(sql),
		Output:    r.out,
		AtMS:      ms(begin.Sub(l.start)),
		ElapsedMS: ms(time.Since(begin)),
	}
	for _, a := range args {
		st.Params = append(st.Params, param(a))
	}
	if r.err != nil {
		st.Error = errText(r.err)
	}
	l.mu.Lock()
	l.sc.Steps = append(l.sc.Steps, st)
	l.mu.Unlock()
	if l.o.Log != nil {
		out := st.Output
		if st.Error != "" {
			out = st.Error
		}
		fmt.Fprintf(l.o.Log, "  [%s] %s -> %s (%.1f ms)\n", who, brief(st.SQL, st.Params), strings.ReplaceAll(out, "\n", "; "), st.ElapsedMS)
	}
}

// assert records an assertion and reports whether it held.
func (l *lab) assert(name, expected, actual string) bool {
	a := &Assertion{Name: name, Expected: expected, Actual: actual, Pass: expected == actual}
	l.mu.Lock()
	l.sc.Assertions = append(l.sc.Assertions, a)
	l.mu.Unlock()
	if l.o.Log != nil {
		verdict := "ok  "
		if !a.Pass {
			verdict = "FAIL"
		}
		fmt.Fprintf(l.o.Log, "  %s %s: expected %s, got %s\n", verdict, name, show(expected), show(actual))
	}
	return a.Pass
}

func (l *lab) note(format string, args ...any) {
	l.mu.Lock()
	l.sc.Notes = append(l.sc.Notes, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *lab) timing(name string, d time.Duration) {
	l.mu.Lock()
	l.ev.Timings = append(l.ev.Timings, NamedTiming{Name: l.sc.Name + ": " + name, MS: ms(d)})
	l.mu.Unlock()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func show(s string) string {
	if s == "" {
		return `""`
	}
	return strings.ReplaceAll(s, "\n", "; ")
}

// brief is a statement's first line with its parameters, for the progress log.
func brief(sql string, params []string) string {
	first := strings.TrimSpace(strings.SplitN(sql, "\n", 2)[0])
	if strings.Contains(sql, "\n") {
		first += " ..."
	}
	if len(params) > 0 {
		first += " [" + strings.Join(params, ", ") + "]"
	}
	return first
}

func param(a any) string {
	switch v := a.(type) {
	case time.Duration:
		return fmt.Sprintf("%g seconds", v.Seconds())
	case string:
		return v
	}
	return fmt.Sprint(a)
}

// errText is one line: the Postgres message and SQLSTATE when there is one.
func errText(err error) string {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return fmt.Sprintf("%s: %s (SQLSTATE %s)", pg.Severity, pg.Message, pg.Code)
	}
	return textfmt.OneLine(err.Error())
}
