package stress

import (
	"os"
	"testing"

	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

// The tests that run statements start the shared server on first use; the others never do.
func TestMain(m *testing.M) { os.Exit(pgserver.Main(m)) }
