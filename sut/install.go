package sut

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"pgqcheck/internal/textfmt"
)

// Installed is a queue whose schema runs in a database of its own. It knows every table and
// sequence schema.sql created, wherever it put them, so Reset can empty the queue generically.
type Installed struct {
	Queue *Queue
	DSN   string

	admin     *pgx.Conn
	reset     string   // the statements that empty every table schema.sql created
	sequences []string // every sequence schema.sql created, qualified and quoted

	ids         *registry
	goq         GoQueue // a queue written in Go: its state in this database
	claimWorker bool    // claim.sql takes the worker's name
	tokenCols   int     // columns claim.sql returns beyond id (and generation): the claim's token
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
	in := &Installed{Queue: q, DSN: dsn, admin: admin, ids: newRegistry()}
	if q.newGo != nil {
		in.goq = q.newGo()
		q.Schema = in.goq.Schema()
	}
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
	// Simple protocol: schema.sql may hold many statements.
	if _, err := in.admin.Exec(ctx, in.Queue.Schema, pgx.QueryExecModeSimpleProtocol); err != nil {
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
	if in.goq != nil {
		return nil // its operations are Go code, not statements to prepare
	}
	return in.validate(ctx)
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

// Column kinds the contract speaks of.
type colKind int

const (
	anyCol colKind = iota
	intCol
	boolCol
	idCol    // an integer, or any type where ids are opaque
	tokenCol // the claim's token: any number of columns of any type, to the end
)

var (
	intOIDs  = map[uint32]bool{20: true, 21: true, 23: true, 1700: true}
	textOIDs = map[uint32]bool{25: true, 1043: true, 19: true} // text, varchar, name
)

// shape is one statement's parameters and columns as the queue's declaration makes them.
type shape struct {
	file   string
	sql    string
	params []string  // what the contract passes, by name; a name ending in "?" may be absent (claim's worker)
	cols   []colKind // nil: any result (or none)
	names  string    // how the contract names the columns, for messages
}

func (in *Installed) shapes() []shape {
	q := in.Queue
	claimParams := []string{"worker name?"}
	if q.FixedLease == 0 {
		claimParams = []string{"lease length (interval)", "worker name?"}
	}
	claimCols, claimNames := []colKind{idCol, intCol, tokenCol}, "id, generation[, token...]"
	completeParams := []string{"id", "generation", "token..."}
	snapCols, snapNames := []colKind{idCol, anyCol, intCol, boolCol}, "id, state, generation, lease_live"
	if q.NoGeneration {
		claimCols, claimNames = []colKind{idCol, tokenCol}, "id[, token...]"
		completeParams = []string{"id", "token..."}
		snapCols, snapNames = []colKind{idCol, anyCol, boolCol}, "id, state, lease_live"
	}
	s := []shape{
		{FileEnqueue, q.Enqueue, []string{"payload (jsonb)"}, []colKind{idCol}, "id"},
		{FileClaim, q.Claim, claimParams, claimCols, claimNames},
		{FileComplete, q.Complete, completeParams, []colKind{intCol}, "rows completed"},
		{FileExpire, q.Expire, []string{"id"}, nil, ""},
		{FileSnapshot, q.Snapshot, nil, snapCols, snapNames},
	}
	if q.Lock != "" {
		s = append(s, shape{FileLock, q.Lock, []string{"id"}, nil, ""})
	}
	if q.Rescue != "" {
		s = append(s, shape{FileRescue, q.Rescue, nil, []colKind{idCol}, "id"})
	}
	return s
}

// validate prepares every statement and compares parameters and result columns with the contract.
// The claim's columns decide how many token values complete.sql takes.
func (in *Installed) validate(ctx context.Context) error {
	for _, s := range in.shapes() {
		sd, err := in.admin.Prepare(ctx, "", s.sql)
		if err != nil {
			return &ContractError{in.Queue.Source, s.file, "does not prepare: " + textfmt.ErrLine(err)}
		}
		if err := in.checkParams(s, sd.ParamOIDs); err != nil {
			return err
		}
		if s.cols == nil {
			continue
		}
		if err := in.checkCols(s, sd.Fields); err != nil {
			return err
		}
	}
	return nil
}

func (in *Installed) checkParams(s shape, oids []uint32) error {
	want := 0
	for _, p := range s.params {
		if !strings.HasSuffix(p, "?") && p != "token..." {
			want++
		}
	}
	got := fmt.Sprint(len(oids))
	switch {
	case s.file == FileClaim && len(oids) == want+1 && textOIDs[oids[want]]:
		in.claimWorker = true
		return nil
	case s.file == FileClaim && len(oids) == want+1:
		got += fmt.Sprintf(" ($%d of type oid %d)", want+1, oids[want])
	case s.file == FileComplete:
		want += in.tokenCols
	}
	if len(oids) == want {
		return nil
	}
	var passes string
	switch s.file {
	case FileClaim:
		passes = "$1 lease length (interval), then optionally the worker's name (text)"
		if in.Queue.FixedLease != 0 {
			passes = "no lease (queue.json fixes it), optionally $1 the worker's name (text)"
		}
	case FileComplete:
		passes = fmt.Sprintf("%d: %s", want, strings.Join(s.params[:len(s.params)-1], ", "))
		if in.tokenCols > 0 {
			passes += fmt.Sprintf(", then the %d token column(s) claim.sql returns", in.tokenCols)
		}
	default:
		passes = fmt.Sprintf("%d (%s)", want, contractLine(s.file))
	}
	return &ContractError{in.Queue.Source, s.file, fmt.Sprintf("takes %s parameters; the contract passes %s", got, passes)}
}

func (in *Installed) checkCols(s shape, fields []pgconn.FieldDescription) error {
	fixed := len(s.cols)
	if s.cols[fixed-1] == tokenCol {
		fixed--
		in.tokenCols = len(fields) - fixed
	}
	if len(fields) < fixed || len(fields) > fixed && fixed == len(s.cols) {
		return &ContractError{in.Queue.Source, s.file, fmt.Sprintf("returns %d columns; the contract expects %d: %s", len(fields), fixed, s.names)}
	}
	for i, want := range s.cols[:fixed] {
		oid := fields[i].DataTypeOID
		if want == idCol && in.Queue.OpaqueIDs {
			continue
		}
		if want == idCol && !intOIDs[oid] {
			return &ContractError{in.Queue.Source, s.file, fmt.Sprintf("column %d (%s) has type oid %d; the contract expects an integer id (for uuid or text ids declare \"ids\": \"opaque\" in queue.json)", i+1, fields[i].Name, oid)}
		}
		if (want == intCol && !intOIDs[oid]) || (want == boolCol && oid != 16) {
			kind := map[colKind]string{intCol: "an integer", boolCol: "a boolean"}[want]
			return &ContractError{in.Queue.Source, s.file, fmt.Sprintf("column %d (%s) has type oid %d; the contract expects %s (columns: %s)", i+1, fields[i].Name, oid, kind, s.names)}
		}
	}
	return nil
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
	if r, ok := in.goq.(GoResetter); ok {
		r.Reset()
	}
	return nil
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
