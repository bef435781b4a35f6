package sut

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgqcheck/pgqcheck/internal/textfmt"
)

// Installed is a queue whose schema runs in a database of its own. It knows every table and
// sequence schema.sql created, wherever it put them, so Reset can empty the queue generically.
type Installed struct {
	Queue *Queue
	DSN   string

	admin     *pgx.Conn
	reset     string   // the statements that empty every table schema.sql created
	sequences []string // every sequence schema.sql created, qualified and quoted

	ids *registry // the queue's own ids and tokens, as (job, generation)
	be  backend   // runs the queue's operations in this database
}

// relations lists user relations of the given kinds as quoted qualified names.
const relationsSQL = `
SELECT format('%I.%I', n.nspname, c.relname), c.relkind::text
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r','p','S')
  AND n.nspname NOT IN ('pg_catalog','information_schema','pg_toast')
  AND n.nspname NOT LIKE 'pg_temp%' AND n.nspname NOT LIKE 'pg_toast_temp%'`

// Install runs the queue's schema.sql in the (fresh, empty) database at dsn, records what it
// created and checks every statement against the contract. Errors name the file at fault.
func Install(ctx context.Context, dsn string, q *Queue) (*Installed, error) {
	admin, err := connect(ctx, dsn, "pgqcheck-admin")
	if err != nil {
		return nil, err
	}
	in := &Installed{Queue: q, DSN: dsn, admin: admin, ids: newRegistry(), be: q.open(q)}
	if err := in.install(ctx); err != nil {
		admin.Close(context.Background())
		return nil, err
	}
	return in, nil
}

func (in *Installed) install(ctx context.Context) error {
	before, err := in.relations(ctx)
	if err != nil {
		return err
	}
	if err := in.be.install(ctx, in.admin); err != nil {
		return &ContractError{in.Queue.Source, FileSchema, "fails: " + textfmt.ErrLine(err)}
	}
	after, err := in.relations(ctx)
	if err != nil {
		return err
	}
	var tables []string
	for name, kind := range after {
		if _, old := before[name]; old {
			continue
		}
		if kind == "S" {
			in.sequences = append(in.sequences, name)
		} else {
			tables = append(tables, name)
		}
	}
	if len(tables) == 0 {
		return &ContractError{in.Queue.Source, FileSchema, "creates no table; the queue's jobs must live in a table schema.sql creates"}
	}
	in.reset, err = in.resetSQL(ctx, tables)
	if err != nil {
		return err
	}
	return in.be.ready(ctx, in)
}

func (in *Installed) relations(ctx context.Context) (map[string]string, error) {
	rows, err := in.admin.Query(ctx, relationsSQL)
	if err != nil {
		return nil, fmt.Errorf("pgqcheck: listing relations: %w", err)
	}
	out := map[string]string{}
	for rows.Next() {
		var name, kind string
		if err := rows.Scan(&name, &kind); err != nil {
			return nil, err
		}
		out[name] = kind
	}
	return out, rows.Err()
}

// resetSQL builds the reset. TRUNCATE is always right but costs ~10 ms (it swaps every
// relation's files); a DELETE of the few rows a run leaves costs well under 1 ms. DELETE is
// used only when it is equivalent: no foreign keys (delete order would matter) and no user
// triggers (a delete trigger could write elsewhere) on the tables.
func (in *Installed) resetSQL(ctx context.Context, tables []string) (string, error) {
	var n int
	err := in.admin.QueryRow(ctx, `
SELECT (SELECT count(*) FROM pg_constraint WHERE contype='f' AND (conrelid = ANY($1::regclass[]) OR confrelid = ANY($1::regclass[])))
     + (SELECT count(*) FROM pg_trigger WHERE NOT tgisinternal AND tgrelid = ANY($1::regclass[]))`, tables).Scan(&n)
	if err != nil {
		return "", fmt.Errorf("pgqcheck: inspecting the queue's tables: %s", textfmt.ErrLine(err))
	}
	var b strings.Builder
	b.WriteString("BEGIN;")
	if n == 0 {
		for _, t := range tables {
			b.WriteString("DELETE FROM " + t + ";")
		}
	} else {
		b.WriteString("TRUNCATE " + strings.Join(tables, ", ") + " RESTART IDENTITY CASCADE;")
	}
	// setval, not ALTER SEQUENCE ... RESTART: the latter rewrites the sequence's file.
	for _, s := range in.sequences {
		var start int64
		if err := in.admin.QueryRow(ctx, `SELECT seqstart FROM pg_sequence WHERE seqrelid = $1::regclass`, s).Scan(&start); err != nil {
			return "", fmt.Errorf("pgqcheck: inspecting sequence %s: %s", s, textfmt.ErrLine(err))
		}
		fmt.Fprintf(&b, "SELECT setval(%s, %d, false);", quoteLiteral(s), start)
	}
	b.WriteString("COMMIT;")
	return b.String(), nil
}

// Reset empties the queue: every table schema.sql created is emptied and every sequence
// restarted, so the next run starts exactly where a fresh install would.
func (in *Installed) Reset(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := in.admin.Exec(ctx, in.reset, pgx.QueryExecModeSimpleProtocol); err != nil {
		_, _ = in.admin.Exec(context.Background(), "ROLLBACK")
		return fmt.Errorf("pgqcheck: resetting the queue: %s (is a session from an earlier run still holding a lock?)", textfmt.ErrLine(err))
	}
	in.ids.reset()
	in.be.reset()
	return in.be.afterReset(ctx, in)
}

// Admin is the connection the harness uses for its own queries (pg_stat_activity, cancels).
// Tests must not use it to run queue statements.
func (in *Installed) Admin() *pgx.Conn { return in.admin }

// Close ends the admin connection. Dropping the database is the caller's, who created it.
func (in *Installed) Close() {
	in.admin.Close(context.Background())
}

func connect(ctx context.Context, dsn, app string) (*pgx.Conn, error) {
	return connectVia(ctx, dsn, app, nil)
}

func connectVia(ctx context.Context, dsn, app string, dial DialFunc) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("pgqcheck: bad connection string: %s", textfmt.ErrLine(err))
	}
	if dial != nil {
		if err := viaDial(cfg, dial); err != nil {
			return nil, err
		}
	}
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["application_name"] = app
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgqcheck: connecting to the queue's database: %s", textfmt.ErrLine(err))
	}
	return c, nil
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// execSchema runs schema DDL; simple protocol, as schema.sql may hold many statements.
func execSchema(ctx context.Context, c *pgx.Conn, ddl string) error {
	_, err := c.Exec(ctx, ddl, pgx.QueryExecModeSimpleProtocol)
	return err
}
