package pgqcheck_test

import (
	"flag"
	"os"
	"strings"
	"testing"
)

// rapidFlagGiven reports whether the command line or a RAPID_* variable chose a flag. It reads
// os.Args: flag.Visit cannot tell once TestMain has set flags itself.
func rapidFlagGiven(name string) bool {
	for _, a := range os.Args[1:] {
		a = strings.TrimLeft(a, "-")
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	return os.Getenv("RAPID_"+strings.ToUpper(strings.TrimPrefix(name, "rapid."))) != ""
}

// setRapidFlags sets rapid's flags for one test, except those the user chose, and returns the
// function that restores them.
func setRapidFlags(values map[string]string) (restore func()) {
	var undo []func()
	for name, v := range values {
		f := flag.Lookup(name)
		if f == nil || rapidFlagGiven(name) {
			continue
		}
		old := f.Value.String()
		_ = f.Value.Set(v)
		undo = append(undo, func() { _ = f.Value.Set(old) })
	}
	return func() {
		for _, u := range undo {
			u()
		}
	}
}

// forceFlag sets a flag whatever the user chose (a test whose meaning depends on it) and
// returns the function that restores it.
func forceFlag(tb testing.TB, name, value string) (restore func()) {
	f := flag.Lookup(name)
	if f == nil {
		tb.Fatalf("no flag %s", name)
	}
	old := f.Value.String()
	if err := f.Value.Set(value); err != nil {
		tb.Fatal(err)
	}
	return func() { _ = f.Value.Set(old) }
}
