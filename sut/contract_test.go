package sut_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// copySeed writes the built-in seed queue into a temp folder, with edits applied
// (an empty string removes the file).
func copySeed(t *testing.T, edits map[string]string) string {
	t.Helper()
	q := sut.MustBuiltin("seed")
	return writeFolder(t, map[string]string{
		sut.FileSchema: q.Schema, sut.FileEnqueue: q.Enqueue, sut.FileClaim: q.Claim,
		sut.FileComplete: q.Complete, sut.FileExpire: q.Expire, sut.FileSnapshot: q.Snapshot,
		sut.FileLock: q.Lock,
	}, edits)
}

// writeFolder writes a queue folder of files with edits applied (an empty string removes the
// file) into a temp folder.
func writeFolder(t *testing.T, files, edits map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for f, text := range edits {
		files[f] = text
	}
	for f, text := range files {
		if text == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadDirErrors(t *testing.T) {
	for _, c := range []struct {
		name  string
		edits map[string]string
		want  string
	}{
		{"missing claim", map[string]string{sut.FileClaim: ""}, "claim.sql: missing; the contract needs this file"},
		{"blank complete", map[string]string{sut.FileComplete: "  \n"}, ""},
		{"two statements", map[string]string{sut.FileExpire: "SELECT 1; SELECT 2"}, "expire.sql: holds more than one statement"},
		{"bad json", map[string]string{sut.FileConfig: "{claim_order: any}"}, "queue.json: not valid"},
		{"unknown order", map[string]string{sut.FileConfig: `{"claim_order": "fifo"}`}, `claim_order "fifo" is unknown`},
		{"unknown key", map[string]string{sut.FileConfig: `{"visibility": "30s"}`}, `queue.json: not valid (json: unknown field "visibility"); it is one JSON object with any of the keys`},
		{"bad lease", map[string]string{sut.FileConfig: `{"lease": "soon"}`}, `lease "soon" is not a positive duration`},
		{"negative lease", map[string]string{sut.FileConfig: `{"lease": "-1s"}`}, `lease "-1s" is not a positive duration`},
		{"generation not a bool", map[string]string{sut.FileConfig: `{"generation": "no"}`}, `queue.json: not valid`},
		{"unknown done", map[string]string{sut.FileConfig: `{"done": "archived"}`}, `done "archived" is unknown; use "kept"`},
		{"unknown ids", map[string]string{sut.FileConfig: `{"ids": "uuid"}`}, `ids "uuid" is unknown; use "integer"`},
		{"unknown reclaim", map[string]string{sut.FileConfig: `{"reclaim": "sweeper"}`}, `reclaim "sweeper" is unknown`},
		{"unknown claims", map[string]string{sut.FileConfig: `{"claims": "solo"}`}, `claims "solo" is unknown; use "alone"`},
		{"rescue without rescue.sql", map[string]string{sut.FileConfig: `{"reclaim": "rescue"}`}, `rescue.sql: missing; queue.json declares "reclaim": "rescue"`},
		{"unknown promise", map[string]string{sut.FileConfig: `{"promises": {"exactly-once": false}}`}, `promises names "exactly-once", which is no property`},
		{"promise that cannot be left out", map[string]string{sut.FileConfig: `{"promises": {"mutual exclusion": false}}`}, `promises leaves out property 2 (mutual exclusion); only fencing may be left out`},
		{"two rescue statements", map[string]string{sut.FileRescue: "SELECT 1; SELECT 2"}, "rescue.sql: holds more than one statement"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := sut.LoadDir(copySeed(t, c.edits))
			if c.name == "blank complete" {
				// Whitespace only is as good as missing content: named and explained.
				c.want = "complete.sql: empty; the contract expects"
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
			if strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "pgqcheck: ") {
				t.Fatalf("error is not one pgqcheck line: %q", err)
			}
		})
	}
	if _, err := sut.LoadDir(filepath.Join(t.TempDir(), "nope")); err == nil || !strings.Contains(err.Error(), "PGQCHECK_SQL_DIR must name a folder") {
		t.Fatalf("missing folder: %v", err)
	}
}

func TestLoadDirAccepts(t *testing.T) {
	dir := copySeed(t, map[string]string{
		sut.FileConfig: `{"claim_order": "any"}`,
		sut.FileLock:   "",
		// A semicolon inside a comment or a string is not a second statement.
		sut.FileExpire: "-- moves the lease; as the seed does\nUPDATE jobs SET lease_until=clock_timestamp()-interval '1 second' WHERE id=$1 AND ';'=';';",
	})
	q, err := sut.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if q.Order != model.Any || q.Lock != "" || q.Can().Lock || strings.HasSuffix(q.Expire, ";") {
		t.Fatalf("loaded %+v", q)
	}
	q, err = sut.LoadDir(copySeed(t, map[string]string{
		sut.FileConfig: `{"lease": "1h", "generation": false, "done": "deleted", "ids": "opaque", "reclaim": "rescue", "promises": {"fencing": false, "mutual-exclusion": true}}`,
		sut.FileRescue: "UPDATE jobs SET state='ready' WHERE state='running' AND lease_until < clock_timestamp() RETURNING id",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := model.Shape{NoGeneration: true, DoneDeleted: true, RescueOnly: true, Unfenced: true, Can: model.Can{Lock: true, Rescue: true}}
	if q.Shape() != want || q.FixedLease != time.Hour || !q.OpaqueIDs {
		t.Fatalf("declared %+v, want shape %+v, a fixed lease of 1h, opaque ids, a rescue step and a locker", q.Declared, want)
	}
}

func TestBuiltins(t *testing.T) {
	names := sut.Builtins()
	if len(names) < 3 || names[0] != sut.DefaultQueue {
		t.Fatalf("built-ins %v: want the seed first and the correct variants after it", names)
	}
	for _, n := range names {
		if _, err := sut.Builtin(n); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sut.Builtin("nope"); err == nil || !strings.Contains(err.Error(), "choose one of seed") {
		t.Fatalf("unknown built-in: %v", err)
	}
}
