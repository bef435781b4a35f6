package main

import (
	"fmt"

	"github.com/pgqcheck/pgqcheck/internal/campaign"
)

const reportDetails = `pgqcheck run writes a JSON report and its summary (.txt) into its --report folder.
"pgqcheck report FILE..." prints the summary of each saved report; the exit status is 1 if any
of them found a violation. "pgqcheck report -merge OUT.json A.json B.json ..." merges shard
reports of one queue (campaigns run on several machines) into OUT.json and prints its summary.
`

func runReport(c *cli, args []string) error {
	fs := c.flags("report")
	out := fs.String("merge", "", "merge the given reports into this file")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErrorf("report: no report given; pass one or more report JSON files (pgqcheck report -h)")
	}
	var rs []*campaign.Report
	for _, p := range pos {
		r, err := campaign.ReadReport(p)
		if err != nil {
			return usageErrorf("report: %v", err)
		}
		rs = append(rs, r)
	}
	if *out != "" {
		path, err := writableFile("report", "-merge", *out)
		if err != nil {
			return err
		}
		m, err := campaign.Merge(pos, rs)
		if err != nil {
			return usageErrorf("report: %v", err)
		}
		if err := writeJSON(path, m); err != nil {
			return err
		}
		m.Summary(c.stdout)
		fmt.Fprintf(c.stdout, "merged report: %s\n", path)
		rs = []*campaign.Report{m}
	} else {
		for i, r := range rs {
			if i > 0 {
				fmt.Fprintln(c.stdout)
			}
			fmt.Fprintf(c.stdout, "%s:\n", pos[i])
			r.Summary(c.stdout)
		}
	}
	worst := campaign.WorstVerdict(rs)
	switch worst {
	case campaign.VerdictViolated:
		return violated("")
	case campaign.VerdictError:
		return &exitErr{exitError, "pgqcheck: report: a run ended in a harness error, so it has no verdict; rerun it"}
	}
	return nil
}
