package sut_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/sut"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
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
		{"uuid id undeclared", map[string]string{sut.FileEnqueue: "INSERT INTO jobs(payload) VALUES ($1) RETURNING gen_random_uuid() AS id"}, `enqueue.sql: column 1 (id) has type oid 2950; the contract expects an integer id (for uuid or text ids declare "ids": "opaque" in queue.json)`},
		{"worker name not text", map[string]string{sut.FileClaim: strings.Replace(sut.MustBuiltin("seed").Claim, "$1::interval", "$1::interval + $2::int * interval '0 s'", 1)}, "claim.sql: takes 2 ($2 of type oid 23) parameters; the contract passes $1 lease length (interval), then optionally the worker's name (text)"},
		{"claim takes a lease the queue fixes", map[string]string{sut.FileConfig: `{"lease": "30s"}`}, "claim.sql: takes 1 ($1 of type oid 1186) parameters; the contract passes no lease (queue.json fixes it)"},
		{"token not handed to complete", map[string]string{sut.FileClaim: strings.Replace(sut.MustBuiltin("seed").Claim, "RETURNING j.id,j.generation", "RETURNING j.id, j.generation, j.lease_until", 1)}, "complete.sql: takes 2 parameters; the contract passes 3: id, generation, then the 1 token column(s) claim.sql returns"},
		{"no generation, snapshot still has it", map[string]string{sut.FileConfig: `{"generation": false}`, sut.FileClaim: strings.Replace(sut.MustBuiltin("seed").Claim, "RETURNING j.id,j.generation", "RETURNING j.id", 1), sut.FileComplete: strings.ReplaceAll(sut.MustBuiltin("seed").Complete, "AND generation=$2", "")}, "snapshot.sql: returns 4 columns; the contract expects 3: id, state, lease_live"},
		{"rescue returns no id", map[string]string{sut.FileRescue: "UPDATE jobs SET state='ready' WHERE state='running' AND lease_until < clock_timestamp() RETURNING state"}, "rescue.sql: column 1 (state)"},
		{"rescue takes a parameter", map[string]string{sut.FileRescue: "UPDATE jobs SET state='ready' WHERE lease_until < $1 RETURNING id"}, "rescue.sql: takes 1 parameters; the contract passes 0"},
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
