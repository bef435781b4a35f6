package pgqcheck_test

import (
	"flag"
	"os"
	"testing"

	"pgqcheck/sut/pgserver"
)

func TestMain(m *testing.M) {
	flag.Parse()
	// rapid's shrinker may spend 30 s on one failure; program.Reduce finishes the job in well
	// under a second, so rapid gets 10 s unless the command line chose otherwise.
	defaultFlag("rapid.shrinktime", "10s")
	os.Exit(pgserver.Main(m))
}

// defaultFlag sets a flag the command line (or its RAPID_* variable) left alone.
func defaultFlag(name, value string) {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	if !set && os.Getenv("RAPID_SHRINKTIME") == "" {
		_ = flag.Set(name, value)
	}
}
