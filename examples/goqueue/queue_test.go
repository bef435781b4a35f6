package goqueue

import (
	"testing"

	"github.com/pgqcheck/pgqcheck"
	"github.com/pgqcheck/pgqcheck/sut"
)

// TestQueue judges the Go queue in every mode. sut.Declared{} says it has the seed's shape:
// claims in lowest-id order, each asking for its own lease, a token that fences completion.
func TestQueue(t *testing.T) {
	pgqcheck.Judge(t, pgqcheck.GoQueue("tasks", sut.Declared{}, func() sut.GoQueue { return &Queue{} }))
}
