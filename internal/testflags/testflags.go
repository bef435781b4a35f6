// Package testflags sets test flags (rapid's, the fuzzer's): to the suite's defaults without
// overriding what the user chose, or, for one search or test, to what it needs.
package testflags

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// Given reports whether the command line (or, for rapid's flags, a RAPID_* variable) chose a
// flag. It reads os.Args: flag.Visit cannot tell once a test has set flags itself.
func Given(name string) bool {
	for _, a := range os.Args[1:] {
		a = strings.TrimLeft(a, "-")
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	if rest, ok := strings.CutPrefix(name, "rapid."); ok {
		return os.Getenv("RAPID_"+strings.ToUpper(rest)) != ""
	}
	return false
}

// Defaults sets flags, except those the user chose, and returns the function that restores
// them.
func Defaults(values map[string]string) (restore func()) {
	var undo []func()
	for name, v := range values {
		if Given(name) {
			continue
		}
		if restore, err := Set(name, v); err == nil {
			undo = append(undo, restore)
		}
	}
	return func() {
		for _, u := range undo {
			u()
		}
	}
}

// Force sets a flag whatever the user chose (a test whose meaning depends on it) and returns
// the function that restores it.
func Force(tb testing.TB, name, value string) (restore func()) {
	restore, err := Set(name, value)
	if err != nil {
		tb.Fatal(err)
	}
	return restore
}

// Set sets a registered flag and returns the function that gives it back its old value.
func Set(name, value string) (restore func(), err error) {
	f := flag.Lookup(name)
	if f == nil {
		return nil, fmt.Errorf("no flag %s", name)
	}
	old := f.Value.String()
	if err := f.Value.Set(value); err != nil {
		return nil, err
	}
	return func() { _ = f.Value.Set(old) }, nil
}

// ScratchTemp points TMPDIR at a fresh folder for the rest of the process and returns the
// function that removes it. It is for packages whose tests fail on purpose (mutants, replays of
// failing cases): the report folders such failures write for a reader are theirs alone, and go
// when the tests end.
func ScratchTemp() (remove func()) {
	dir, err := os.MkdirTemp("", "pgqcheck-test-")
	if err != nil {
		return func() {}
	}
	old, had := os.LookupEnv("TMPDIR")
	_ = os.Setenv("TMPDIR", dir)
	return func() {
		if had {
			_ = os.Setenv("TMPDIR", old)
		} else {
			_ = os.Unsetenv("TMPDIR")
		}
		_ = os.RemoveAll(dir)
	}
}

// WaitingParallel is the -parallel default for a package whose tests mostly wait, on Postgres
// or on real time, each in a database of its own: twice the cores (the Go side of a run is a
// fifth of a core).
func WaitingParallel() string { return strconv.Itoa(2 * runtime.GOMAXPROCS(0)) }
