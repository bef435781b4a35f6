// Package textfmt holds the text formatting that reports and errors share.
package textfmt

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/jackc/pgx/v5/pgconn"
)

// Thousands prints an integer with comma thousands separators: 1429 -> "1,429".
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// OneLine folds text onto one line: errors and verdicts print as one.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// FirstWord is the text before the first blank or colon: "15.4 (Debian...)" -> "15.4",
// "crash: server killed" -> "crash".
func FirstWord(s string) string {
	if f := strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == ':' }); len(f) > 0 {
		return f[0]
	}
	return s
}

// ErrLine is an error on one line, keeping a Postgres error's SQLSTATE.
func ErrLine(err error) string {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return fmt.Sprintf("%s (SQLSTATE %s)", pg.Message, pg.Code)
	}
	return OneLine(err.Error())
}
