package pgerr

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestCode(t *testing.T) {
	pg := &pgconn.PgError{Code: "57014", Message: "canceling statement due to user request"}
	for _, c := range []struct {
		err  error
		want string
	}{
		{pg, "57014"},
		{fmt.Errorf("claim.sql failed: %w", pg), "57014"},
		{errors.New("conn closed"), ""},
		{nil, ""},
	} {
		if got := Code(c.err); got != c.want {
			t.Errorf("Code(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

func TestDeadlockPIDs(t *testing.T) {
	pg := &pgconn.PgError{Code: "40P01", Detail: "Process 12 waits for ShareLock on transaction 7; blocked by process 34.\nProcess 34 waits for ShareLock on transaction 8; blocked by process 12."}
	got := DeadlockPIDs(fmt.Errorf("effect.sql failed: %w", pg))
	if len(got) != 2 || !got[12] || !got[34] {
		t.Fatalf("DeadlockPIDs = %v, want 12 and 34", got)
	}
	if got := DeadlockPIDs(errors.New("conn closed")); len(got) != 0 {
		t.Fatalf("DeadlockPIDs of a client error = %v, want none", got)
	}
}
