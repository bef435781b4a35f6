package verdict

import "github.com/pgqcheck/pgqcheck/model"

// Failer is where a failing run is reported: a *rapid.T, or a *testing.T under the fuzzer.
type Failer interface {
	Helper()
	Fatalf(format string, args ...any)
}

// FailProperty fails t with msg from a line of its own for each property (p < 0: not a
// property), so that rapid's shrinker, which keeps only candidates failing with the same stack,
// shrinks toward the same broken promise rather than toward any failure.
func FailProperty(t Failer, p model.Property, msg string) {
	t.Helper()
	switch p {
	case model.PClaimOrder:
		t.Fatalf("%s", msg)
	case model.PFencing:
		t.Fatalf("%s", msg)
	case model.PExclusion:
		t.Fatalf("%s", msg)
	case model.PGenerations:
		t.Fatalf("%s", msg)
	case model.PDoneOnce:
		t.Fatalf("%s", msg)
	case model.PSkipLocked:
		t.Fatalf("%s", msg)
	case model.PRecovery:
		t.Fatalf("%s", msg)
	case model.PLinearizable:
		t.Fatalf("%s", msg)
	case model.PDBTime:
		t.Fatalf("%s", msg)
	case model.PNoErrors:
		t.Fatalf("%s", msg)
	case model.PWriteFencing:
		t.Fatalf("%s", msg)
	case model.PRetries:
		t.Fatalf("%s", msg)
	case model.PRenewal:
		t.Fatalf("%s", msg)
	case model.PScheduling:
		t.Fatalf("%s", msg)
	case model.PDrain:
		t.Fatalf("%s", msg)
	case model.PEffects:
		t.Fatalf("%s", msg)
	default:
		t.Fatalf("%s", msg)
	}
}
