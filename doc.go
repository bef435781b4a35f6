// Package pgqcheck proves, or refutes, that a PostgreSQL job queue keeps its promises.
//
// The suite's tests live beside this file: props_test.go runs the model against the real queue
// step by step (go test -run Prop); linearize_test.go checks concurrent histories
// (go test -run Linear). The packages hold the pieces: model (the specification), sut (the
// queue's SQL, its installation and client), sut/pgserver (where Postgres comes from) and
// program (operations that print and run themselves).
package pgqcheck
