package main

import (
	"flag"
	"os"
	"testing"

	"github.com/pgqcheck/pgqcheck/internal/testflags"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

func TestMain(m *testing.M) {
	flag.Parse()
	// The commands here replay failing cases on mutants: the report folders of those expected
	// failures go with the tests.
	remove := testflags.ScratchTemp()
	pgserver.OnInterrupt(remove)
	code := m.Run()
	remove()
	os.Exit(code)
}
