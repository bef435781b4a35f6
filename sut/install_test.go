package sut_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"pgqcheck/sut"
	"pgqcheck/sut/pgserver"
	"pgqcheck/sut/suttest"
)

func TestMain(m *testing.M) { os.Exit(pgserver.Main(m)) }

// installErr installs a folder and returns the error, which must be one pgqcheck line.
func installErr(t *testing.T, dir string) error {
	t.Helper()
	q, err := sut.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := pgserver.Shared(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	db, err := srv.CreateDatabase(context.Background(), "pgqcheck_contract")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Drop(context.Background())
	in, err := sut.Install(context.Background(), db.DSN, q)
	if err == nil {
		in.Close()
		return nil
	}
	if strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "pgqcheck: ") {
		t.Fatalf("error is not one pgqcheck line: %q", err)
	}
	return err
}

func TestInstallValidates(t *testing.T) {
	for _, c := range []struct {
		name  string
		edits map[string]string
		want  string
	}{
		{"schema fails", map[string]string{sut.FileSchema: "CREATE TABLE jobs (id bigint"}, "schema.sql: fails: syntax error"},
		{"no table", map[string]string{sut.FileSchema: "CREATE SEQUENCE s"}, "schema.sql: creates no table"},
		{"claim does not prepare", map[string]string{sut.FileClaim: "SELECT id, generation FROM job WHERE $1::interval IS NOT NULL"}, `claim.sql: does not prepare: relation "job" does not exist`},
		{"claim one column", map[string]string{sut.FileClaim: "SELECT id FROM jobs WHERE $1::interval IS NOT NULL"}, "claim.sql: returns 1 columns; the contract expects 2: id, generation"},
		{"complete no params", map[string]string{sut.FileComplete: "SELECT 1"}, "complete.sql: takes 0 parameters; the contract passes 2"},
		{"snapshot text lease", map[string]string{sut.FileSnapshot: "SELECT id, state, generation, 'yes' FROM jobs ORDER BY id"}, "snapshot.sql: column 4"},
		{"enqueue text id", map[string]string{sut.FileEnqueue: "INSERT INTO jobs(payload) VALUES ($1) RETURNING state"}, "enqueue.sql: column 1 (state)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := installErr(t, copySeed(t, c.edits))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// Reset must empty every table schema.sql created, wherever it put them, and restart ids,
// whether it takes the DELETE path (plain tables) or the TRUNCATE path (foreign keys).
func TestResetEmptiesEverySchemaTable(t *testing.T) {
	schemas := map[string]string{
		"plain": `CREATE SCHEMA q;
CREATE TABLE q.jobs (id bigserial PRIMARY KEY, state text NOT NULL DEFAULT 'ready', generation bigint NOT NULL DEFAULT 0, lease_until timestamptz, payload jsonb NOT NULL);
CREATE TABLE q.audit (n int, job bigint);
CREATE SEQUENCE q.other START 7;`,
		"foreign keys": `CREATE SCHEMA q;
CREATE TABLE q.jobs (id bigserial PRIMARY KEY, state text NOT NULL DEFAULT 'ready', generation bigint NOT NULL DEFAULT 0, lease_until timestamptz, payload jsonb NOT NULL);
CREATE TABLE q.audit (n int, job bigint REFERENCES q.jobs(id));
CREATE SEQUENCE q.other START 7;`,
	}
	for name, schema := range schemas {
		t.Run(name, func(t *testing.T) {
			seed := sut.MustBuiltin("seed")
			q, err := sut.LoadDir(copySeed(t, map[string]string{
				sut.FileSchema:   schema,
				sut.FileEnqueue:  "INSERT INTO q.jobs(payload) VALUES ($1) RETURNING id",
				sut.FileClaim:    strings.ReplaceAll(seed.Claim, "jobs", "q.jobs"),
				sut.FileComplete: strings.ReplaceAll(seed.Complete, "jobs", "q.jobs"),
				sut.FileExpire:   strings.ReplaceAll(seed.Expire, "jobs", "q.jobs"),
				sut.FileSnapshot: strings.ReplaceAll(seed.Snapshot, "jobs", "q.jobs"),
				sut.FileLock:     strings.ReplaceAll(seed.Lock, "jobs", "q.jobs"),
			}))
			if err != nil {
				t.Fatal(err)
			}
			in := suttest.Install(t, q)
			ctx := context.Background()
			s, err := in.Connect(ctx, "t", sut.SessionOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for i := 0; i < 3; i++ {
				id, _, err := s.Enqueue(ctx, `{}`)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := s.Conn().Exec(ctx, "INSERT INTO q.audit VALUES (nextval('q.other'), $1)", id); err != nil {
					t.Fatal(err)
				}
			}
			if err := in.Reset(ctx); err != nil {
				t.Fatal(err)
			}
			var rows, next int64
			if err := s.Conn().QueryRow(ctx, "SELECT (SELECT count(*) FROM q.jobs) + (SELECT count(*) FROM q.audit), nextval('q.other')").Scan(&rows, &next); err != nil {
				t.Fatal(err)
			}
			id, _, err := s.Enqueue(ctx, `{}`)
			if err != nil {
				t.Fatal(err)
			}
			if rows != 0 || next != 7 || id != 1 {
				t.Fatalf("after reset: %d rows left, sequence at %d (want 7), first id %d (want 1)", rows, next, id)
			}
		})
	}
}
