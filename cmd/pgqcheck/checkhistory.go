package main

import (
	"fmt"
	"os"

	"pgqcheck/linear"
)

func init() {
	commands = append(commands, &command{"check-history", "FILE [-html OUT.html]", "re-check a saved concurrent history for linearizability", runCheckHistory})
	commandDetails["check-history"] = `FILE is a history JSON written by a stress or scheduled run (history.json or job.json in
its report folder). It is checked again, without Postgres: every job's operations must have a
linearization consistent with the sequential specification, and a drained history must account
for every job. With -html, porcupine's timeline is written: of the failing job when the check
fails, else of the whole history when it is small enough to draw. Exit status 1 if the history
breaks a property.
`
}

func runCheckHistory(c *cli, args []string) error {
	fs := c.flags("check-history")
	html := fs.String("html", "", "write porcupine's timeline to this file")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("check-history: pass exactly one history file (got %d); pgqcheck check-history -h", len(pos))
	}
	path := pos[0]
	if _, err := os.Stat(path); err != nil {
		return usageErrorf("check-history: %s cannot be read (%v); pass a history.json from a report folder", path, unwrapPath(err))
	}
	out := ""
	if *html != "" {
		if out, err = writableFile("check-history", "-html", *html); err != nil {
			return err
		}
	}
	v, err := linear.CheckFile(path, out)
	if v == nil {
		return usageErrorf("check-history: %s is not a history (%s); pass a history.json from a report folder", path, oneLine(fmt.Sprint(err)))
	}
	fmt.Fprintln(c.stdout, v.String())
	for _, p := range v.Problems {
		fmt.Fprintf(c.stdout, "  - %s\n", p)
	}
	if v.Explanation != "" {
		fmt.Fprint(c.stdout, v.Explanation)
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "pgqcheck: check-history: no timeline written: %s\n", oneLine(err.Error()))
	} else if out != "" {
		fmt.Fprintf(c.stdout, "timeline: %s\n", out)
	}
	switch {
	case v.OK:
		return nil
	case v.Violation == nil:
		return &exitErr{exitError, "pgqcheck: check-history: the history is malformed (a harness bug, not a verdict on the queue); rerun the campaign that wrote it"}
	}
	return &violation{}
}
