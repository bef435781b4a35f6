package pgqcheck_test

import (
	"flag"
	"os"
	"testing"

	_ "github.com/pgqcheck/pgqcheck/internal/goqueues" // the Go queues and their mutants
	"github.com/pgqcheck/pgqcheck/internal/testflags"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

func TestMain(m *testing.M) {
	flag.Parse()
	// rapid's shrinker may spend 30 s on one failure; verdict.Reduce finishes the job in well
	// under a second, so rapid gets 10 s unless the command line chose otherwise.
	testflags.Defaults(map[string]string{"rapid.shrinktime": "10s", "test.parallel": testflags.WaitingParallel()})
	code := pgserver.Main(m)
	board.Print(os.Stdout)
	os.Exit(code)
}
