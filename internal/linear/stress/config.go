package stress

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/effectdest"
	"github.com/pgqcheck/pgqcheck/internal/linear/check"
	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/timeline"
)

// Config bounds a free-running stress run. Zero fields take the defaults.
type Config struct {
	Workers  int           // sessions that claim and complete (default 3)
	Duration time.Duration // how long the traffic runs (default 2s)
	MaxOps   int           // stop the traffic once this many operations are recorded (default 200000)
	MaxJobs  int           // jobs enqueued at most (default 100000)
	Backlog  int           // ready jobs the enqueuer keeps waiting (default 8)
	// Lease is every claim's lease. It must outlive the run: the model treats leases as live
	// until an expiry ends them (default 1h).
	Lease   time.Duration
	NoChaos bool // run the traffic without faults
	// NoProxy connects the workers straight to Postgres, so the chaos goroutine injects no
	// proxy faults (dropped replies, cuts, delays, stalls); by default they go through the
	// fault proxy.
	NoProxy bool
	Seed    uint64 // seeds the traffic's choices; 0 picks one (printed in the result)
	// ReportDir is where a failing run writes its report folder (default os.TempDir()).
	ReportDir string
	// PassDir, when set, is the folder a passing run writes its report into (emptied first),
	// so that a user sees the run's shape: its measures page and history.
	PassDir string
	// CheckTimeout bounds the linearizability check (default 60s).
	CheckTimeout time.Duration
	// Crash, when set, is the server the run crashes and restarts Crashes times (default 1)
	// while the traffic runs (see crashRounds). It must serve this run alone.
	Crash   Crasher
	Crashes int
	// Dest is the URL of a destination (effectdest) that workers call with a job's external
	// effect before each completion, its calls now and then faulted; the run then judges what
	// it holds (property 17). "": none.
	Dest string
}

func (c Config) withDefaults() Config {
	if c.Workers <= 0 {
		c.Workers = 3
	}
	if c.Duration <= 0 {
		c.Duration = 2 * time.Second
	}
	if c.MaxOps <= 0 {
		c.MaxOps = 200000
	}
	if c.MaxJobs <= 0 {
		c.MaxJobs = 100000
	}
	if c.Backlog <= 0 {
		c.Backlog = 8
	}
	if c.Lease <= 0 {
		c.Lease = time.Hour
	}
	if c.Seed == 0 {
		c.Seed = rand.Uint64()
	}
	if c.CheckTimeout <= 0 {
		c.CheckTimeout = time.Minute
	}
	if c.Crash != nil && c.Crashes <= 0 {
		c.Crashes = 1
	}
	return c
}

// LostFaultsToCatch is how many dropped replies and cuts a bug that only a lost connection
// shows (a statement split in two, the second riding on the session's next one) may survive
// before a stress search gives it up. Measured beside a busy loop on the split mutants: 16
// catches took 3 to 23 such faults (170 in all), about one in 11 catching; surviving 100 then
// has odds of about 5 in 100,000.
const LostFaultsToCatch = 100

// Result is what a stress run did and what the checks concluded.
type Result struct {
	Seed      uint64
	Counts    program.Counts
	Verdict   *check.Conclusion
	History   *history.History
	ReportDir string // the report folder: the verdict's a failure, or PassDir was set
	Measures  *timeline.Measures
	Traffic   time.Duration // how long the traffic ran (the drain and the check excluded)
	CheckTime time.Duration
	// Rechecked: the first check ran out of its time, and the verdict is the second's.
	Rechecked bool
	Crashes   []CrashRound // the crash rounds, when Config.Crash was set
	// Dest is what the destination held after the drain, when Config.Dest was set.
	Dest effectdest.Counts
}

// Failed reports whether the run found a violation.
func (r *Result) Failed() bool { return r.Verdict != nil && !r.Verdict.OK }

func (r *Result) String() string {
	s := fmt.Sprintf("stress seed %d: %s in %v; %s", r.Seed, r.Counts, r.Traffic.Round(time.Millisecond), r.Verdict)
	if r.Rechecked {
		s += fmt.Sprintf(" (checked twice: the first check ran out of time; %v in all)", r.CheckTime.Round(time.Second))
	}
	if len(r.Crashes) > 0 {
		s += "; " + crashSummary(r.Crashes)
	}
	if r.ReportDir != "" {
		s += "\nreport: " + r.ReportDir
	}
	return s
}
