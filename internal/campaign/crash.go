package campaign

import (
	"fmt"
	"sync"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/linear/stress"
)

// Crash rounds (Config.Crash): every stress round kills the server with SIGKILL once during
// its traffic and restarts it on the same data directory (stress.Config.Crash). The
// server is every worker's, so a crash campaign runs stress rounds only, with one worker, on a
// server started in crash mode (pgserver.Options.Crash).

// CrashTally is what the crash rounds of a campaign did.
type CrashTally struct {
	mu           sync.Mutex
	Rounds       int64   `json:"rounds"`         // crash-restart rounds, each a kill and a restart
	LongestDownS float64 `json:"longest_down_s"` // the longest time from a kill until the restarted server accepted sessions
	TotalDownS   float64 `json:"total_down_s"`
}

func (t *CrashTally) add(cs []stress.CrashRound) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range cs {
		t.Rounds++
		t.LongestDownS = max(t.LongestDownS, c.Down.Seconds())
		t.TotalDownS += c.Down.Seconds()
	}
}

func (t *CrashTally) snapshot() *CrashTally {
	t.mu.Lock()
	defer t.mu.Unlock()
	return &CrashTally{Rounds: t.Rounds, LongestDownS: t.LongestDownS, TotalDownS: t.TotalDownS}
}

func (t *CrashTally) String() string {
	mean := 0.0
	if t.Rounds > 0 {
		mean = t.TotalDownS / float64(t.Rounds)
	}
	return fmt.Sprintf("%d crash-restart rounds (server down %s on average, %s at most)", t.Rounds,
		Round(time.Duration(mean*float64(time.Second))), Round(time.Duration(t.LongestDownS*float64(time.Second))))
}

// checkCrash says why a campaign cannot run crash rounds as configured (nil when it can).
func checkCrash(cfg Config) error {
	if !cfg.Crash {
		return nil
	}
	if cfg.Mode.Name() != "stress" {
		return fmt.Errorf("crash rounds run in stress mode only (got --mode %s); use --mode stress --crash", cfg.Mode.Name())
	}
	if cfg.Workers > 1 {
		return fmt.Errorf("crash rounds need --workers 1 (got %d): a crash takes down the server every worker shares", cfg.Workers)
	}
	if why := cfg.Server.CrashUnsupported(); why != "" {
		return fmt.Errorf("crash rounds: %s", why)
	}
	return nil
}

func (t *CrashTally) merge(o *CrashTally) {
	t.Rounds += o.Rounds
	t.LongestDownS = max(t.LongestDownS, o.LongestDownS)
	t.TotalDownS += o.TotalDownS
}
