package river051

import (
	"testing"

	"github.com/pgqcheck/pgqcheck/adapters/riverq"
)

// TestRiverVersionsAgree: the module builds River's client, driver and types at the version
// it registers (riverq.Register's), so its verdicts are that version's.
func TestRiverVersionsAgree(t *testing.T) {
	if Name != "river-v0.51.2" {
		t.Fatalf("registered as %s, want river-v0.51.2", Name)
	}
	if err := riverq.CheckVersions("v0.51.2"); err != nil {
		t.Fatal(err)
	}
}
