// Package killtable holds the kill table's test (TestMutants): every mutant of
// testdata/mutants caught by every mode its suites demand. It is a package of its own, a test
// binary of its own beside the root package's, because it hunts for minutes: with the Prop and
// Linear tests in one binary, a loaded machine carried that binary past go test's default
// ten-minute timeout. Apart, the two run side by side, each within its own.
package killtable
