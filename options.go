package pgqcheck

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// A Mode is one way of driving the queue; Judge runs every mode unless Modes chooses.
type Mode string

// The modes, as this module's tests name them.
const (
	// Sequential is the Prop suite: the model and the queue side by side, one operation at a
	// time, every answer compared and every failure shrunk to its shortest program.
	Sequential Mode = "sequential"
	// LeaseTime is the Prop suite with real time: leases of drawn length, pauses to just
	// before and just after a lease's end, each answer judged on the database clock.
	LeaseTime Mode = "lease-time"
	// Stress is free-running concurrent traffic with faults on the wire, then a drain; every
	// job's history is checked for linearizability and every job accounted for.
	Stress Mode = "stress"
	// Scheduled is concurrent sessions in an interleaving rapid draws, so that a concurrent
	// failure shrinks and replays as a program.
	Scheduled Mode = "scheduled"
)

// Modes lists every mode, in the order Judge runs them.
var Modes = []Mode{Sequential, LeaseTime, Scheduled, Stress}

// An Option changes how Judge judges.
type Option struct{ apply func(*settings) error }

type settings struct {
	modes  []Mode
	budget time.Duration
	dsn    string
	corpus string
	seed   uint64
	checks int
}

func settingsOf(opts []Option) (settings, error) {
	s := settings{modes: Modes, corpus: defaultCorpus}
	for _, o := range opts {
		if err := o.apply(&s); err != nil {
			return s, err
		}
	}
	return s, nil
}

func (s settings) has(m Mode) bool { return slices.Contains(s.modes, m) }

// WithModes judges only the modes named, as `go test -run` would pick the suites.
func WithModes(ms ...Mode) Option {
	return Option{func(s *settings) error {
		for _, m := range ms {
			if !slices.Contains(Modes, m) {
				return fmt.Errorf("pgqcheck: no mode %q; the modes are %s", m, modeNames())
			}
		}
		if len(ms) == 0 {
			return fmt.Errorf("pgqcheck: WithModes names no mode; name one of %s, or leave the option out for all", modeNames())
		}
		s.modes = ms
		return nil
	}}
}

func modeNames() string {
	var names []string
	for _, m := range Modes {
		names = append(names, string(m))
	}
	return strings.Join(names, ", ")
}

// WithBudget keeps judging, round after round with fresh seeds, until d has passed since
// Judge began or a promise breaks. Without it Judge runs one round, as go test does here.
func WithBudget(d time.Duration) Option {
	return Option{func(s *settings) error {
		if d < 0 {
			return fmt.Errorf("pgqcheck: WithBudget(%v) is negative; give a duration such as 2*time.Minute", d)
		}
		s.budget = d
		return nil
	}}
}

// WithPostgres judges on the existing server dsn names (a connect string or URL): Judge
// creates databases of its own there and drops them when it ends, touching nothing else.
// Without it, Postgres comes from PGQCHECK_PG: PGQCHECK_DSN, a local Docker image, or a
// throwaway cluster from the machine's PostgreSQL binaries.
func WithPostgres(dsn string) Option {
	return Option{func(s *settings) error {
		if strings.TrimSpace(dsn) == "" {
			return fmt.Errorf("pgqcheck: WithPostgres was given an empty connect string; pass one such as postgres://user@host/db, or leave the option out")
		}
		s.dsn = dsn
		return nil
	}}
}

// WithCorpus keeps the regression corpus in dir (relative to the test's package folder; by
// default testdata/pgqcheck): every failure's program is saved there, and every program there
// is replayed before any search, and must hold.
func WithCorpus(dir string) Option {
	return Option{func(s *settings) error {
		if strings.TrimSpace(dir) == "" {
			return fmt.Errorf("pgqcheck: WithCorpus was given an empty folder; name one, such as testdata/pgqcheck")
		}
		s.corpus = dir
		return nil
	}}
}

// WithSeed makes the searches start from seed (each later round from the next one), so a
// run can be repeated; by default every search draws a seed of its own, or takes -rapid.seed.
func WithSeed(seed uint64) Option {
	return Option{func(s *settings) error {
		s.seed = seed
		return nil
	}}
}

// WithChecks sets how many programs each sequential and scheduled search runs (by default
// -rapid.checks, 100); a lease-time search runs a fifth of them, since its programs mostly
// wait.
func WithChecks(n int) Option {
	return Option{func(s *settings) error {
		if n < 1 {
			return fmt.Errorf("pgqcheck: WithChecks(%d): give at least 1", n)
		}
		s.checks = n
		return nil
	}}
}
