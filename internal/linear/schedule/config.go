package schedule

import (
	"io"
	"time"

	"github.com/pgqcheck/pgqcheck/sut"
)

// Config shapes scheduled mode. Zero fields take the defaults.
type Config struct {
	Sessions  int // concurrent sessions at most, 2 or 3 (default 3)
	MaxPrefix int // sequential operations before the concurrent part, beyond the first enqueues (default 5)
	MaxSuffix int // operations per concurrent session (default 5)
	// Name names the report folder (default the queue's name). A failing run writes its report
	// to the same folder each time, so the folder left is the shrunk failure's.
	Name      string
	ReportDir string // root of the report folder (default os.TempDir())
	// CheckTimeout bounds the linearizability check of one run (default 30s).
	CheckTimeout time.Duration
	// Trace, when set, receives every run's program, interleaving and verdict.
	Trace io.Writer
}

func (c Config) withDefaults(q *sut.Queue) Config {
	if c.Sessions < 2 {
		c.Sessions = 3
	}
	if c.MaxPrefix <= 0 {
		c.MaxPrefix = 5
	}
	if c.MaxSuffix <= 0 {
		c.MaxSuffix = 5
	}
	if c.Name == "" {
		c.Name = q.Name
	}
	if c.CheckTimeout <= 0 {
		c.CheckTimeout = 30 * time.Second
	}
	return c
}
