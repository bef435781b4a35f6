package pgserver

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// dsnTimeout bounds the first connection to PGQCHECK_DSN.
const dsnTimeout = 5 * time.Second

// startDSN uses an existing server. It touches nothing on it but the
// databases created through CreateDatabase.
func startDSN(ctx context.Context, dsn string) (*Server, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, errorf("PGQCHECK_DSN is not a valid connect string: %s", rootCause(err))
	}
	where := describeDSN(cfg)
	ctx, cancel := context.WithTimeout(ctx, dsnTimeout)
	defer cancel()
	cfg.ConnectTimeout = dsnTimeout
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, dsnError(cfg, err)
	}
	defer conn.Close(context.Background())

	dsnFor := func(db string) string {
		if db == "" {
			return dsn
		}
		return dsnWithDatabase(dsn, db)
	}
	s := makeServer(BackendDSN, where, dsnFor)
	if err := s.readVersion(ctx, conn); err != nil {
		return nil, err
	}
	return s, nil
}

// dsnError explains a failed connection to PGQCHECK_DSN in one line.
func dsnError(cfg *pgx.ConnConfig, err error) error {
	hostPort := fmt.Sprintf("host=%s port=%d", cfg.Host, cfg.Port)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return errorf("PGQCHECK_DSN server refused the session (%s: %s: %s (SQLSTATE %s)); check the user, password and database in the DSN",
			hostPort, pgErr.Severity, pgErr.Message, pgErr.Code)
	}
	why := rootCause(err)
	if errors.Is(err, context.DeadlineExceeded) {
		why = fmt.Sprintf("no answer within %s", dsnTimeout)
	}
	return errorf("cannot reach PGQCHECK_DSN (%s: %s); check that the server is running and the DSN is right, or unset PGQCHECK_DSN to use a local or docker Postgres",
		hostPort, why)
}

// describeDSN gives where a DSN points, without user or password.
func describeDSN(cfg *pgx.ConnConfig) string {
	if strings.HasPrefix(cfg.Host, "/") {
		return fmt.Sprintf("unix socket %s port %d (dsn)", cfg.Host, cfg.Port)
	}
	return fmt.Sprintf("postgres://%s:%d (dsn)", cfg.Host, cfg.Port)
}

// dsnWithDatabase returns dsn with its database replaced by db. It keeps
// everything else (hosts, TLS settings, options) as written.
func dsnWithDatabase(dsn, db string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		i := strings.Index(dsn, "://") + 3
		rest := dsn[i:]
		end := strings.IndexAny(rest, "/?#")
		if end < 0 {
			end = len(rest)
		}
		authority, after := rest[:end], rest[end:]
		if strings.HasPrefix(after, "/") {
			if j := strings.IndexAny(after, "?#"); j >= 0 {
				after = after[j:]
			} else {
				after = ""
			}
		}
		// A dbname query parameter would override the path: drop it.
		if strings.HasPrefix(after, "?") {
			q, frag, _ := strings.Cut(after[1:], "#")
			var kept []string
			for _, kv := range strings.Split(q, "&") {
				k, _, _ := strings.Cut(kv, "=")
				if k != "dbname" && k != "" {
					kept = append(kept, kv)
				}
			}
			after = ""
			if len(kept) > 0 {
				after = "?" + strings.Join(kept, "&")
			}
			if frag != "" {
				after += "#" + frag
			}
		}
		return dsn[:i] + authority + "/" + url.PathEscape(db) + after
	}
	// keyword=value form: a later setting overrides an earlier one.
	return strings.TrimSpace(dsn) + " dbname=" + quoteKV(db)
}

// quoteKV quotes a value for a keyword=value connect string.
func quoteKV(v string) string {
	if v != "" && !strings.ContainsAny(v, ` '\`) {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}
