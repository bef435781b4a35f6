package campaign

import (
	"flag"
	"os"
	"testing"

	"pgqcheck/sut/pgserver"
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(pgserver.Main(m))
}
