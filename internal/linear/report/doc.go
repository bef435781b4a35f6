// Package report keeps what a concurrent run leaves for people, and re-checks it later: a
// report folder per run (the history, the failing job's cut of it and porcupine's timeline of
// that job, the verdict with the command that re-checks the history, the measures page), and
// CheckFile, which judges a saved history again.
package report
