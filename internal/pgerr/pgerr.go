// Package pgerr reads what a Postgres server said behind an error.
package pgerr

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

// Code is the SQLSTATE of the server error behind err, "" when err is not one (a lost
// connection, a client-side failure).
func Code(err error) string {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.Code
	}
	return ""
}
