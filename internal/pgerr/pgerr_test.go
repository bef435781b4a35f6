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
