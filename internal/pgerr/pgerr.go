// Package pgerr reads what a Postgres server said behind an error.
package pgerr

import (
	"errors"
	"regexp"
	"strconv"

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

// processes finds the backends a deadlock's detail names ("Process 12 waits for ...; blocked
// by process 34.").
var processes = regexp.MustCompile(`[Pp]rocess (\d+)`)

// DeadlockPIDs are the backends the detail of the server error behind err names, as a
// deadlock's (SQLSTATE 40P01) names every backend of its cycle; none when err is no server
// error.
func DeadlockPIDs(err error) map[uint32]bool {
	named := map[uint32]bool{}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		for _, m := range processes.FindAllStringSubmatch(pg.Detail, -1) {
			if pid, err := strconv.ParseUint(m[1], 10, 32); err == nil {
				named[uint32(pid)] = true
			}
		}
	}
	return named
}
