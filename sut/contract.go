// Package sut is the system under test: a queue given as SQL files that follow the contract
// below, the code that installs it into a database of its own, and a client that runs its
// statements and turns their answers into the model's vocabulary.
//
// The contract (one statement per file, except schema.sql):
//
//	schema.sql    none; run once in a fresh database         nothing
//	enqueue.sql   $1 payload (jsonb)                          one row: id
//	claim.sql     $1 lease length (interval)                  zero or one row: id, generation
//	complete.sql  $1 id, $2 generation                        one row: rows completed (0 or 1)
//	expire.sql    $1 id                                       nothing
//	snapshot.sql  none                                        every job: id, state, generation, lease_live
//	lock.sql      $1 id (optional)                            locks that job's row FOR UPDATE
//	queue.json    optional: {"claim_order": "lowest-id" | "any"}
package sut

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"pgqcheck/model"
)

//go:embed queues
var builtin embed.FS

// DefaultQueue is the built-in queue used when no folder is given: the seed's.
const DefaultQueue = "seed"

// Queue is a queue's SQL, loaded and checked for shape, not yet installed anywhere.
type Queue struct {
	Name   string // folder base name, or the built-in's name
	Source string // where it came from, for messages: a path or "built-in seed"
	Order  model.Order

	Schema, Enqueue, Claim, Complete, Expire, Snapshot string
	Lock                                               string // "" when the folder has no lock.sql
}

// Statement names, as files.
const (
	FileSchema   = "schema.sql"
	FileEnqueue  = "enqueue.sql"
	FileClaim    = "claim.sql"
	FileComplete = "complete.sql"
	FileExpire   = "expire.sql"
	FileSnapshot = "snapshot.sql"
	FileLock     = "lock.sql"
	FileConfig   = "queue.json"
)

// ContractError says which file of a queue folder breaks the contract and what it expects.
type ContractError struct {
	Source, File, Problem string
}

func (e *ContractError) Error() string {
	return fmt.Sprintf("pgqcheck: queue %s: %s: %s", e.Source, e.File, e.Problem)
}

// LoadDir reads a user's queue folder.
func LoadDir(dir string) (*Queue, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("pgqcheck: queue folder %s: %v; PGQCHECK_SQL_DIR must name a folder holding schema.sql, enqueue.sql, claim.sql, complete.sql, expire.sql and snapshot.sql", dir, errors.Unwrap(err))
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("pgqcheck: queue folder %s is a file, not a folder; point PGQCHECK_SQL_DIR at the folder holding the queue's .sql files", dir)
	}
	abs, _ := filepath.Abs(dir)
	return load(os.DirFS(dir), filepath.Base(abs), abs)
}

// Builtin returns one of the queues shipped in the binary (see Builtins).
func Builtin(name string) (*Queue, error) {
	sub, err := fs.Sub(builtin, "queues/"+name)
	if err != nil {
		return nil, err
	}
	if _, err := fs.Stat(sub, FileClaim); err != nil {
		return nil, fmt.Errorf("pgqcheck: no built-in queue %q; choose one of %s", name, strings.Join(Builtins(), ", "))
	}
	return load(sub, name, "built-in "+name)
}

// MustBuiltin is Builtin for names known at compile time.
func MustBuiltin(name string) *Queue {
	q, err := Builtin(name)
	if err != nil {
		panic(err)
	}
	return q
}

// Builtins lists the shipped queues, the seed first.
func Builtins() []string {
	ents, _ := fs.ReadDir(builtin, "queues")
	var out []string
	for _, e := range ents {
		if e.IsDir() && e.Name() != DefaultQueue {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return append([]string{DefaultQueue}, out...)
}

// EnvSQLDir names the variable that replaces the built-in queues with a user's folder.
const EnvSQLDir = "PGQCHECK_SQL_DIR"

// FromEnv returns the user's queue when PGQCHECK_SQL_DIR is set, else nil.
func FromEnv() (*Queue, error) {
	dir := os.Getenv(EnvSQLDir)
	if dir == "" {
		return nil, nil
	}
	return LoadDir(dir)
}

// Under returns the queues a test suite should judge: the user's folder alone when
// PGQCHECK_SQL_DIR is set (so a run is a verdict on that one queue), else every built-in.
func Under() ([]*Queue, error) {
	q, err := FromEnv()
	if err != nil || q != nil {
		return []*Queue{q}, err
	}
	var out []*Queue
	for _, n := range Builtins() {
		out = append(out, MustBuiltin(n))
	}
	return out, nil
}

func load(fsys fs.FS, name, source string) (*Queue, error) {
	q := &Queue{Name: name, Source: source, Order: model.LowestID}
	for _, f := range []struct {
		file     string
		dst      *string
		optional bool
	}{
		{FileSchema, &q.Schema, false},
		{FileEnqueue, &q.Enqueue, false},
		{FileClaim, &q.Claim, false},
		{FileComplete, &q.Complete, false},
		{FileExpire, &q.Expire, false},
		{FileSnapshot, &q.Snapshot, false},
		{FileLock, &q.Lock, true},
	} {
		b, err := fs.ReadFile(fsys, f.file)
		if errors.Is(err, fs.ErrNotExist) && f.optional {
			continue
		}
		if err != nil {
			problem := "cannot be read: " + err.Error()
			if errors.Is(err, fs.ErrNotExist) {
				problem = "missing; the contract needs this file (" + contractLine(f.file) + ")"
			}
			return nil, &ContractError{source, f.file, problem}
		}
		text := strings.TrimSpace(string(b))
		if text == "" {
			return nil, &ContractError{source, f.file, "empty; the contract expects " + contractLine(f.file)}
		}
		if f.file != FileSchema {
			text = strings.TrimSpace(strings.TrimSuffix(text, ";"))
			if strings.Contains(stripComments(text), ";") {
				return nil, &ContractError{source, f.file, "holds more than one statement; only schema.sql may"}
			}
		}
		*f.dst = text
	}
	b, err := fs.ReadFile(fsys, FileConfig)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, &ContractError{source, FileConfig, "cannot be read: " + err.Error()}
	default:
		var cfg struct {
			ClaimOrder string `json:"claim_order"`
		}
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cfg); err != nil {
			return nil, &ContractError{source, FileConfig, fmt.Sprintf("not valid (%v); expected {\"claim_order\": \"lowest-id\"} or {\"claim_order\": \"any\"}", err)}
		}
		switch model.Order(cfg.ClaimOrder) {
		case model.LowestID, model.Any:
			q.Order = model.Order(cfg.ClaimOrder)
		case "":
		default:
			return nil, &ContractError{source, FileConfig, fmt.Sprintf("claim_order %q is unknown; use \"lowest-id\" or \"any\"", cfg.ClaimOrder)}
		}
	}
	return q, nil
}

// stripComments drops -- comments and quoted text, so a semicolon inside them is not taken
// for a second statement.
func stripComments(s string) string {
	var b strings.Builder
	inQuote := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inQuote:
			if c == '\'' {
				inQuote = false
			}
		case c == '\'':
			inQuote = true
		case c == '-' && i+1 < len(s) && s[i+1] == '-':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func contractLine(file string) string {
	switch file {
	case FileSchema:
		return "DDL run once in a fresh database"
	case FileEnqueue:
		return "$1 payload (jsonb) -> one row: id"
	case FileClaim:
		return "$1 lease length (interval) -> zero or one row: id, generation"
	case FileComplete:
		return "$1 id, $2 generation -> one row, one column: rows completed (0 or 1)"
	case FileExpire:
		return "$1 id -> nothing; moves that job's lease into the past"
	case FileSnapshot:
		return "no parameters -> every job: id, state, generation, lease_live (bool), ordered by id"
	case FileLock:
		return "$1 id -> locks that job's row FOR UPDATE"
	}
	return ""
}

// Dir is the queue's folder, or "" for a built-in queue.
func (q *Queue) Dir() string {
	if strings.HasPrefix(q.Source, "built-in ") {
		return ""
	}
	return q.Source
}

// Ref names the queue for a saved case: its folder relative to root when it lies inside (so
// the case still resolves in another checkout), else its source as is.
func (q *Queue) Ref(root string) string {
	dir := q.Dir()
	if dir == "" || root == "" {
		return q.Source
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return q.Source
	}
	rel, err := filepath.Rel(absRoot, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return q.Source
	}
	return rel
}

// LoadRef loads a queue named by Ref: a built-in, or a folder relative to root.
func LoadRef(root, ref string) (*Queue, error) {
	if name, ok := strings.CutPrefix(ref, "built-in "); ok {
		return Builtin(name)
	}
	if !filepath.IsAbs(ref) {
		ref = filepath.Join(root, ref)
	}
	return LoadDir(ref)
}
