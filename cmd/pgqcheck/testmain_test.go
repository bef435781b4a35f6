package main

import (
	"flag"
	"os"
	"testing"

	"pgqcheck/internal/testflags"
)

func TestMain(m *testing.M) {
	flag.Parse()
	// The commands here replay failing cases on mutants: the report folders of those expected
	// failures go with the tests.
	remove := testflags.ScratchTemp()
	code := m.Run()
	remove()
	os.Exit(code)
}
