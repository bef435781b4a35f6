package main

import (
	"flag"
	"os"
	"testing"

	"pgqcheck/internal/testflags"
	"pgqcheck/sut/pgserver"
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
