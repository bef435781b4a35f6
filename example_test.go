package pgqcheck_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck"
	"github.com/pgqcheck/pgqcheck/sut"
)

// A queue's own test judges its folder of SQL on every go test: the saved cases in
// testdata/pgqcheck replay first, then every mode searches, and a failure is saved there.
func ExampleJudge() {
	test := func(t *testing.T) {
		pgqcheck.Judge(t, pgqcheck.SQLDir("queue/sql"))
	}
	_ = test // func TestQueue(t *testing.T) in the queue's package
}

// A longer search on a spare machine: rounds with fresh seeds for ten minutes, on an existing
// server, keeping the cases in a folder of the team's choosing.
func ExampleJudge_campaign() {
	test := func(t *testing.T) {
		pgqcheck.Judge(t, pgqcheck.SQLDir("queue/sql"),
			pgqcheck.WithBudget(10*time.Minute),
			pgqcheck.WithPostgres(os.Getenv("QUEUE_TEST_DSN")),
			pgqcheck.WithCorpus("testdata/queue-cases"))
	}
	_ = test
}

// A queue written in Go is judged through its constructor: Judge installs it in a database of
// its own per mode, so each gets fresh state. sut.Declared{} is the seed's shape.
func ExampleGoQueue() {
	var newQueue func() sut.GoQueue // returns the queue's value, which implements sut.GoQueue
	test := func(t *testing.T) {
		pgqcheck.Judge(t, pgqcheck.GoQueue("tasks", sut.Declared{}, newQueue),
			pgqcheck.WithModes(pgqcheck.Sequential, pgqcheck.Scheduled))
	}
	_ = test
}

// A folder that breaks the contract is one line that names the fix, before anything runs.
func ExampleSQLDir() {
	q := pgqcheck.SQLDir("testdata/queues/at-least-once")
	fmt.Println(q.Name(), q.Err())
	fmt.Println(pgqcheck.SQLDir("no/such/folder").Err())
	// Output:
	// at-least-once <nil>
	// pgqcheck: queue folder no/such/folder is not a folder here; pgqcheck.SQLDir takes the folder, relative to the test's package, that holds schema.sql, enqueue.sql, claim.sql, complete.sql, expire.sql and snapshot.sql
}
