// Package generate is what every mode draws its operations from: the kinds of operation, the
// weight of each in each mode, the spans of real time they choose among, and how each kind is
// drawn from choices. rapid's state machine (sequential programs), the scheduled chooser (rapid
// or FuzzScheduled's bytes) and FuzzQueue's decoder all draw from the one table in config.go,
// so a new operation is drawn in every mode by adding it there; stress traffic's weights live
// beside it.
//
// A mode differs from another only in its dialect (Draw): which session an operation runs on,
// which job it names. Sequential and fuzzed programs pick among the world's workers, lockers
// and jobs; a scheduled session's operations run on that session and name jobs by their
// position in enqueue order, since a scheduled program is drawn before it runs.
package generate
