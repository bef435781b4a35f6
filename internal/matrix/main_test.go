package matrix

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
	testflags.Defaults(map[string]string{"test.parallel": testflags.WaitingParallel()})
	// Campaigns here hunt mutants: the report folders of their expected failures go with the tests.
	remove := testflags.ScratchTemp()
	pgserver.OnInterrupt(remove)
	code := pgserver.Main(m)
	remove()
	os.Exit(code)
}
