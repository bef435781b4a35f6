package plan

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgqcheck/pgqcheck/internal/pgerr"
	"github.com/pgqcheck/pgqcheck/internal/textfmt"
	"github.com/pgqcheck/pgqcheck/sut"
)

// Lab is an installed queue prepared for building states and measuring claims in them. It owns
// the queue's contents while open: Fill replaces them, Close empties the queue.
type Lab struct {
	in *sut.Installed
	s  *sut.Session

	table string // the jobs table, quoted and qualified
	id    string // its id column, quoted
	cols  string // the columns copied from the templates, quoted, comma-separated

	state State   // what the table holds now
	tail  []int64 // ids of the active (non-done) rows, replaced by each Fill
	dirty bool    // done rows exist beyond what state says (a Fill failed midway)
}

// Kinds of template row, as stored beside each copy of one.
const (
	kindDone    = "done"
	kindExpired = "expired"
	kindRunning = "running"
	kindReady   = "ready"
)

// templateLease outlives any measurement, so the running template stays live throughout.
const templateLease = 24 * time.Hour

// claimLease is the lease the measured claim asks for; it only feeds the SET clause.
const claimLease = 30 * time.Second

const templates = "pg_temp.pgqcheck_plan_templates"

// Open empties the queue, makes one job of each kind through the contract and locates the
// table that holds them. A shape the fill cannot reproduce gives a *NotMeasurableError.
func Open(ctx context.Context, in *sut.Installed) (*Lab, error) {
	s, err := in.Connect(ctx, "plan", sut.SessionOptions{})
	if err != nil {
		return nil, err
	}
	l := &Lab{in: in, s: s}
	if err := l.open(ctx); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

func (l *Lab) open(ctx context.Context) error {
	if err := l.in.Reset(ctx); err != nil {
		return err
	}
	kept, err := l.rowCounts(ctx)
	if err != nil {
		return err
	}
	ids, kinds, err := l.makeTemplates(ctx)
	if err != nil {
		return err
	}
	if err := l.locate(ctx, ids, kept); err != nil {
		return err
	}
	var cases strings.Builder
	for i, id := range ids {
		fmt.Fprintf(&cases, " WHEN %d THEN '%s'", id, kinds[i])
	}
	idList := fmt.Sprintf("%d, %d, %d, %d", ids[0], ids[1], ids[2], ids[3])
	// The templates move to a temporary table: left in the jobs table they would hold the
	// lowest ids, and a lowest-id claim would find them before walking any history.
	_, err = l.conn().Exec(ctx, fmt.Sprintf(`DROP TABLE IF EXISTS %[1]s;
CREATE TEMP TABLE %[1]s AS SELECT CASE %[2]s%[3]s END AS pgqcheck_kind, %[4]s FROM %[5]s WHERE %[2]s IN (%[6]s);
DELETE FROM %[5]s WHERE %[2]s IN (%[6]s)`, templates, l.id, cases.String(), l.cols, l.table, idList), pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return fmt.Errorf("pgqcheck: plan: setting the template rows aside: %s", textfmt.ErrLine(err))
	}
	return nil
}

// makeTemplates enqueues four jobs and drives them, through the queue's own statements, to
// done, running with a live lease, running with an expired lease, and (untouched) ready.
func (l *Lab) makeTemplates(ctx context.Context) (ids [4]int64, kinds [4]string, err error) {
	contract := func(what string, err error) error {
		return notMeasurable("making one job of each kind through the contract: %s: %v (the Prop tests say more)", what, err)
	}
	for i := range ids {
		if ids[i], _, err = l.s.Enqueue(ctx, `{"order_id": "ord-1"}`); err != nil {
			return ids, kinds, contract("enqueue", err)
		}
	}
	taken := map[int64]string{}
	claim := func(kind string) (int64, int64, error) {
		id, gen, ok, _, err := l.s.Claim(ctx, templateLease)
		if err == nil && !ok {
			err = errors.New("no job returned")
		}
		if err == nil && (taken[id] != "" || !slices.Contains(ids[:], id)) {
			err = fmt.Errorf("returned job %d, not one of the fresh jobs %v", id, ids)
		}
		if err != nil {
			return 0, 0, contract("claim", err)
		}
		taken[id] = kind
		return id, gen, nil
	}
	id, gen, err := claim(kindDone)
	if err != nil {
		return ids, kinds, err
	}
	if n, _, err := l.s.Complete(ctx, id, gen); err != nil || n != 1 {
		if err == nil {
			err = fmt.Errorf("completed %d rows for its own live claim", n)
		}
		return ids, kinds, contract("complete", err)
	}
	// The live one before the expired one: an expired job is eligible, and a claim may take it.
	if _, _, err = claim(kindRunning); err != nil {
		return ids, kinds, err
	}
	if id, _, err = claim(kindExpired); err != nil {
		return ids, kinds, err
	}
	if _, err := l.s.Expire(ctx, id); err != nil {
		return ids, kinds, contract("expire", err)
	}
	for i, id := range ids {
		kinds[i] = taken[id]
		if kinds[i] == "" {
			kinds[i] = kindReady
		}
	}
	return ids, kinds, nil
}

// userTables lists the tables in the queue's database (all of them schema.sql's: the database
// is the suite's own), partitions folded into their parents.
const userTablesSQL = `
SELECT c.oid::regclass::text
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r','p') AND NOT c.relispartition
  AND n.nspname NOT IN ('pg_catalog','information_schema') AND n.nspname !~ '^pg_(toast|temp)'
ORDER BY 1`

// idColumnsSQL lists the columns that could hold a job's id: integers the table fills itself.
const idColumnsSQL = `
SELECT a.attname
FROM pg_attribute a
WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped
  AND a.atttypid IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype)
  AND (a.attidentity <> '' OR a.atthasdef) AND a.attgenerated = ''
ORDER BY a.attnum`

// copiedColumnsSQL lists the columns a copy takes from its template: all but the id and
// those the table computes itself.
const copiedColumnsSQL = `
SELECT coalesce(string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum), '')
FROM pg_attribute a
WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped
  AND a.attgenerated = '' AND a.attidentity = '' AND a.attname <> $2`

// rowCounts counts the rows of every user table.
func (l *Lab) rowCounts(ctx context.Context) (map[string]int64, error) {
	tables, err := l.strings(ctx, userTablesSQL)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, t := range tables {
		var total int64
		if err := l.conn().QueryRow(ctx, "SELECT count(*) FROM "+t).Scan(&total); err != nil {
			return nil, fmt.Errorf("pgqcheck: plan: counting %s: %s", t, textfmt.ErrLine(err))
		}
		out[t] = total
	}
	return out, nil
}

// locate finds the one table that holds exactly the four jobs, keyed by the ids the contract
// returned, and checks that no other table was written. A table that holds as many rows as it
// did right after the reset (the state reset.sql rebuilds, a settings row) was not written.
func (l *Lab) locate(ctx context.Context, ids [4]int64, kept map[string]int64) error {
	counts, err := l.rowCounts(ctx)
	if err != nil {
		return err
	}
	tables := make([]string, 0, len(counts))
	for t := range counts {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	type match struct{ table, col string }
	var found []match
	var written []string
	for _, t := range tables {
		total := counts[t]
		if total == 0 || total == kept[t] {
			continue
		}
		written = append(written, t)
		cols, err := l.strings(ctx, idColumnsSQL, t)
		if err != nil {
			return err
		}
		for _, c := range cols {
			// The id column holds the four ids, one row each: a column whose values merely lie
			// among them (a priority of 1 on every job) does not tell the rows apart.
			var n int64
			q := fmt.Sprintf("SELECT count(DISTINCT %[2]s) FROM %[1]s WHERE %[2]s = ANY($1)", t, pgx.Identifier{c}.Sanitize())
			if err := l.conn().QueryRow(ctx, q, ids[:]).Scan(&n); err != nil {
				return fmt.Errorf("pgqcheck: plan: reading %s: %s", t, textfmt.ErrLine(err))
			}
			if n == 4 && total == 4 {
				found = append(found, match{t, c})
			}
		}
	}
	switch {
	case len(found) == 0:
		return notMeasurable("table shape unknown: no table holds exactly the four jobs made through the contract, keyed by their ids in an integer column the table fills itself (the seed's shape: one row per job, id from an identity or default); tables written: %s", orNone(written))
	case len(found) > 1:
		return notMeasurable("table shape unknown: several columns hold the four job ids, one each (%v); the lab needs one integer id column the table fills itself", found)
	case len(written) > 1:
		return notMeasurable("table shape unknown: enqueue, claim or complete also wrote %s besides %s; copying the jobs table alone would leave them inconsistent", orNone(without(written, found[0].table)), found[0].table)
	}
	l.table, l.id = found[0].table, pgx.Identifier{found[0].col}.Sanitize()
	if err := l.conn().QueryRow(ctx, copiedColumnsSQL, l.table, found[0].col).Scan(&l.cols); err != nil {
		return fmt.Errorf("pgqcheck: plan: reading the columns of %s: %s", l.table, textfmt.ErrLine(err))
	}
	if l.cols == "" {
		return notMeasurable("table shape unknown: %s holds nothing but its id", l.table)
	}
	return nil
}

// Fill makes the table hold st: st.DoneRows done jobs with the lowest ids, then the expired,
// running and ready ones, then VACUUM ANALYZE, so that statistics and visibility are what
// autovacuum would have left. Growing the done rows only appends; shrinking them starts over.
func (l *Lab) Fill(ctx context.Context, st State) error {
	if st.DoneRows < 0 || st.ReadyRows < 0 || st.ExpiredRows < 0 || st.RunningRows < 0 {
		return fmt.Errorf("pgqcheck: plan: a state cannot hold negative rows: %+v", st)
	}
	if st.DoneRows < l.state.DoneRows || l.dirty {
		if err := l.empty(ctx); err != nil {
			return err
		}
	}
	l.dirty = true
	if len(l.tail) > 0 {
		if _, err := l.conn().Exec(ctx, fmt.Sprintf("DELETE FROM %s WHERE %s = ANY($1)", l.table, l.id), l.tail); err != nil {
			return fmt.Errorf("pgqcheck: plan: removing the previous active rows: %s", textfmt.ErrLine(err))
		}
		l.tail = nil
	}
	if _, err := l.copies(ctx, kindDone, st.DoneRows-l.state.DoneRows, false); err != nil {
		return err
	}
	for _, k := range []struct {
		kind string
		n    int
	}{{kindExpired, st.ExpiredRows}, {kindRunning, st.RunningRows}, {kindReady, st.ReadyRows}} {
		ids, err := l.copies(ctx, k.kind, k.n, true)
		if err != nil {
			return err
		}
		l.tail = append(l.tail, ids...)
	}
	// INDEX_CLEANUP ON: by default VACUUM leaves index entries of dead rows in place when few
	// heap pages hold any, so the previous state's active rows would linger in the partial
	// indexes and a state's cost would depend on the states built before it.
	if _, err := l.conn().Exec(ctx, "VACUUM (ANALYZE, INDEX_CLEANUP ON) "+l.table); err != nil {
		return fmt.Errorf("pgqcheck: plan: VACUUM ANALYZE %s: %s", l.table, textfmt.ErrLine(err))
	}
	var total int64
	if err := l.conn().QueryRow(ctx, "SELECT count(*) FROM "+l.table).Scan(&total); err != nil {
		return fmt.Errorf("pgqcheck: plan: counting %s: %s", l.table, textfmt.ErrLine(err))
	}
	if total != int64(st.total()) {
		return fmt.Errorf("pgqcheck: plan: %s holds %d rows after the fill, want %d (a trigger?)", l.table, total, st.total())
	}
	l.state, l.dirty = st, false
	return nil
}

// copies inserts n copies of the template of kind, in one statement. ids are returned only
// when asked for: the done rows can be a million.
func (l *Lab) copies(ctx context.Context, kind string, n int, wantIDs bool) ([]int64, error) {
	if n <= 0 {
		return nil, nil
	}
	q := fmt.Sprintf(`INSERT INTO %s (%s) SELECT %s FROM %s t CROSS JOIN generate_series(1, $1) g WHERE t.pgqcheck_kind = $2 ORDER BY g`,
		l.table, l.cols, l.cols, templates)
	fail := func(err error) ([]int64, error) {
		if strings.HasPrefix(pgerr.Code(err), "23") {
			return nil, notMeasurable("copying a %s job into %s breaks a constraint: %s", kind, l.table, textfmt.ErrLine(err))
		}
		return nil, fmt.Errorf("pgqcheck: plan: copying %d %s jobs into %s: %s", n, kind, l.table, textfmt.ErrLine(err))
	}
	if !wantIDs {
		if _, err := l.conn().Exec(ctx, q, n, kind); err != nil {
			return fail(err)
		}
		return nil, nil
	}
	rows, err := l.conn().Query(ctx, q+" RETURNING "+l.id, n, kind)
	if err != nil {
		return fail(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return fail(err)
	}
	return ids, nil
}

// empty removes every row. TRUNCATE first: a DELETE of a million rows would leave them all
// for VACUUM and the next state's indexes bloated. Reset then restarts what schema.sql made.
func (l *Lab) empty(ctx context.Context) error {
	if l.table != "" {
		// Fails if another table references this one; Reset below is then the way.
		_, _ = l.conn().Exec(ctx, "TRUNCATE "+l.table)
	}
	if err := l.in.Reset(ctx); err != nil {
		return err
	}
	l.state, l.tail, l.dirty = State{}, nil, false
	return nil
}

// State is what the table holds now.
func (l *Lab) State() State { return l.state }

// ServerVersion is the server's version, for reports.
func (l *Lab) ServerVersion() string {
	var v string
	_ = l.conn().QueryRow(context.Background(), "SHOW server_version").Scan(&v)
	return v
}

// Explain runs the queue's claim once under EXPLAIN (ANALYZE, BUFFERS) in a transaction that
// is rolled back whatever happens, so the state is the same afterwards.
func (l *Lab) Explain(ctx context.Context) (*Claim, error) {
	tx, err := l.conn().Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("pgqcheck: plan: BEGIN: %s", textfmt.ErrLine(err))
	}
	// Rolls back on every early return, even with ctx cancelled; a no-op after Rollback.
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var out []byte
	// TIMING OFF: per-node clocks would add their own cost to every row a bad plan walks; the
	// total execution time is still measured. The newline keeps a leading comment in
	// claim.sql from swallowing the statement.
	err = tx.QueryRow(ctx, "EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT JSON)\n"+l.in.Queue.Claim, claimLease).Scan(&out)
	if err != nil {
		return nil, fmt.Errorf("pgqcheck: plan: EXPLAIN ANALYZE of claim.sql: %s", textfmt.ErrLine(err))
	}
	if err := tx.Rollback(ctx); err != nil {
		return nil, fmt.Errorf("pgqcheck: plan: ROLLBACK after EXPLAIN ANALYZE: %s", textfmt.ErrLine(err))
	}
	return ParseExplain(out)
}

// Close empties the queue and ends the lab's session.
func (l *Lab) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = l.empty(ctx)
	l.s.Close()
}

func (l *Lab) conn() *pgx.Conn { return l.s.Conn() }

func (l *Lab) strings(ctx context.Context, q string, args ...any) ([]string, error) {
	rows, err := l.conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("pgqcheck: plan: reading the catalog: %s", textfmt.ErrLine(err))
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("pgqcheck: plan: reading the catalog: %s", textfmt.ErrLine(err))
	}
	return out, nil
}

func without(list []string, drop string) []string {
	var out []string
	for _, s := range list {
		if s != drop {
			out = append(out, s)
		}
	}
	return out
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}
