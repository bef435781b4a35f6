package pgqcheck_test

import (
	"os"
	"testing"

	"pgqcheck/sut/pgserver"
)

func TestMain(m *testing.M) { os.Exit(pgserver.Main(m)) }
