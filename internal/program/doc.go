// Package program holds the operations every mode runs: small values that print themselves,
// parse back from what they print, say when they apply, and resolve into statements against a
// world of sessions. A statement (Stmt) is one type per kind, carrying how it runs on a session,
// what its answer means to the model and to the world, and what a history keeps of it. The
// sequential package runs programs beside the model; the linear packages run the same
// operations on concurrent sessions; fuzz encodings and package generate draw them; saved
// programs (.ops files) replay them, and one reducer (Reduce) shrinks them in every mode.
package program
