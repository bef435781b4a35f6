package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// action is the part of action.yml this test reads.
type action struct {
	Name   string
	Inputs map[string]struct {
		Description string
		Required    bool
		Default     string
	}
	Runs struct {
		Using string
		Steps []struct {
			ID    string
			Uses  string
			Shell string
			Run   string
			With  map[string]string
			Env   map[string]string
		}
	}
}

var inputRef = regexp.MustCompile(`\$\{\{\s*inputs\.([a-z-]+)\s*\}\}`)

// TestAction keeps the GitHub Action a composite of this module's own scripts: every input
// described and used, every input it reads declared, every script it runs present, the judge
// step running scripts/judge-queue.sh, the report uploaded, and the workflow in campaigns.md
// passing only inputs the Action has.
func TestAction(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var a action
	if err := yaml.Unmarshal(b, &a); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	if a.Runs.Using != "composite" {
		t.Errorf("action.yml runs %q; want a composite action", a.Runs.Using)
	}
	for _, want := range []string{"queue", "duration", "postgres-version"} {
		if _, ok := a.Inputs[want]; !ok {
			t.Errorf("action.yml has no input %q", want)
		}
	}
	used := map[string]bool{}
	for _, m := range inputRef.FindAllStringSubmatch(string(b), -1) {
		used[m[1]] = true
		if _, ok := a.Inputs[m[1]]; !ok {
			t.Errorf("action.yml reads inputs.%s, which it does not declare", m[1])
		}
	}
	for name, in := range a.Inputs {
		if !used[name] {
			t.Errorf("input %q is declared but never used", name)
		}
		if in.Description == "" {
			t.Errorf("input %q has no description", name)
		}
	}
	scripts := regexp.MustCompile(`\$GITHUB_ACTION_PATH/(scripts/[a-z-]+\.sh)`)
	var judged, uploaded bool
	for _, s := range a.Runs.Steps {
		if s.Run != "" && s.Shell == "" {
			t.Errorf("step %q runs a script with no shell (a composite step needs one)", s.ID)
		}
		for _, m := range scripts.FindAllStringSubmatch(s.Run, -1) {
			if _, err := os.Stat(filepath.Join("..", m[1])); err != nil {
				t.Errorf("a step runs %s, which does not exist", m[1])
			}
			judged = judged || m[1] == "scripts/judge-queue.sh"
		}
		uploaded = uploaded || strings.HasPrefix(s.Uses, "actions/upload-artifact@")
	}
	if !judged || !uploaded {
		t.Errorf("the Action must run scripts/judge-queue.sh (%v) and upload the report (%v)", judged, uploaded)
	}
	checkWorkflow(t, a)
}

// checkWorkflow: the workflow campaigns.md shows uses the Action with inputs it has, and all
// of the required ones.
func checkWorkflow(t *testing.T, a action) {
	b, err := os.ReadFile("campaigns.md")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)```yaml\n(# .github/workflows/queue.yml.*?)```").FindSubmatch(b)
	if block == nil {
		t.Fatal("campaigns.md shows no workflow .github/workflows/queue.yml")
	}
	var wf struct {
		Jobs map[string]struct {
			Steps []struct {
				Uses string
				With map[string]string
			}
		}
	}
	if err := yaml.Unmarshal(block[1], &wf); err != nil {
		t.Fatalf("campaigns.md's workflow: %v", err)
	}
	var with []map[string]string
	for _, j := range wf.Jobs {
		for _, s := range j.Steps {
			if strings.HasPrefix(s.Uses, "pgqcheck/pgqcheck@") {
				with = append(with, s.With)
			}
		}
	}
	if len(with) == 0 {
		t.Fatal("campaigns.md's workflow does not use the Action (uses: pgqcheck/pgqcheck@...)")
	}
	for _, w := range with {
		for k := range w {
			if _, ok := a.Inputs[k]; !ok {
				t.Errorf("campaigns.md's workflow passes %q, which the Action has no input for", k)
			}
		}
		for name, in := range a.Inputs {
			if _, given := w[name]; in.Required && !given {
				t.Errorf("campaigns.md's workflow does not pass the required input %q", name)
			}
		}
	}
}
