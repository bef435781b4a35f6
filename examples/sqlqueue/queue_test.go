package sqlqueue

import (
	"testing"

	"github.com/pgqcheck/pgqcheck"
)

// TestEmailQueue judges the queue in sql/ on every go test: the programs kept in
// testdata/pgqcheck replay first, then every mode searches. A failure is saved there too.
func TestEmailQueue(t *testing.T) {
	pgqcheck.Judge(t, pgqcheck.SQLDir("sql"))
}
