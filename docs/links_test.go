// Package docs holds the reference pages; its test keeps their links and the README honest.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// readmeMaxLines keeps the README an entry: the reference lives in docs/.
const readmeMaxLines = 300

// TestLinks checks every relative link in README.md and docs/*.md: the file or folder it names
// must exist, and an #anchor, on the same page or another Markdown page, must match a heading
// there.
func TestLinks(t *testing.T) {
	pages := []string{filepath.Join("..", "README.md")}
	more, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, more...)
	if len(more) == 0 {
		t.Fatal("no docs/*.md pages found")
	}
	anchors := map[string]map[string]bool{} // page (cleaned path) -> its heading slugs
	slugsOf := func(page string) (map[string]bool, error) {
		if a, ok := anchors[page]; ok {
			return a, nil
		}
		b, err := os.ReadFile(page)
		if err != nil {
			return nil, err
		}
		a := headingSlugs(string(b))
		anchors[page] = a
		return a, nil
	}
	links := 0
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range pageLinks(string(b)) {
			links++
			where := shown(page) + ":" + strconv.Itoa(l.line)
			path, anchor, _ := strings.Cut(l.target, "#")
			target := filepath.Clean(page)
			if path != "" {
				target = filepath.Join(filepath.Dir(page), filepath.FromSlash(path))
				fi, err := os.Stat(target)
				if err != nil {
					t.Errorf("%s: link %q: %s does not exist", where, l.target, shown(target))
					continue
				}
				if fi.IsDir() || !strings.HasSuffix(target, ".md") {
					continue // a folder, or a file whose anchors (a line: #L12) are not headings
				}
			}
			if anchor == "" {
				continue
			}
			slugs, err := slugsOf(target)
			if err != nil {
				t.Errorf("%s: link %q: %v", where, l.target, err)
				continue
			}
			if !slugs[anchor] {
				t.Errorf("%s: link %q: no heading in %s has the anchor #%s", where, l.target, shown(target), anchor)
			}
		}
	}
	if links == 0 {
		t.Fatal("no relative links found: the link parser is broken")
	}
}

// TestReadmeIsAnEntry fails when the README grows past an entry's length.
func TestReadmeIsAnEntry(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d; move reference into a page under docs/ and link to it", n, readmeMaxLines)
	}
}

// TestSlug pins the anchor rules to GitHub's: lower case, spaces to '-', punctuation dropped,
// repeats numbered.
func TestSlug(t *testing.T) {
	got := headingSlugs("# A b\n## Faults on the wire: the fault proxy\n```\n# not a heading\n```\n### `pgqcheck run` -h\n# A b\n## [Linked](x.md) text_1\n")
	for _, want := range []string{"a-b", "faults-on-the-wire-the-fault-proxy", "pgqcheck-run--h", "a-b-1", "linked-text_1"} {
		if !got[want] {
			t.Errorf("no slug %q in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Errorf("a line in a code block was taken for a heading: %v", got)
	}
}

// shown names a path as it is seen from the repository's root (the test runs in docs/).
func shown(path string) string {
	return filepath.ToSlash(filepath.Join("docs", path))
}

type link struct {
	line   int
	target string
}

var (
	linkRe       = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	inlineCodeRe = regexp.MustCompile("`[^`]*`")
	headingRe    = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	schemeRe     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// pageLinks returns the page's relative links, outside code blocks and code spans.
func pageLinks(text string) []link {
	var out []link
	forEachProseLine(text, func(n int, line string) {
		line = inlineCodeRe.ReplaceAllString(line, "")
		for _, m := range linkRe.FindAllStringSubmatch(line, -1) {
			target := strings.TrimSuffix(strings.TrimPrefix(m[1], "<"), ">")
			if schemeRe.MatchString(target) {
				continue // a URL
			}
			out = append(out, link{n, target})
		}
	})
	return out
}

// headingSlugs returns the anchors GitHub gives the page's headings.
func headingSlugs(text string) map[string]bool {
	slugs := map[string]bool{}
	seen := map[string]int{}
	forEachProseLine(text, func(_ int, line string) {
		m := headingRe.FindStringSubmatch(line)
		if m == nil {
			return
		}
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			seen[s]++
			s = s + "-" + strconv.Itoa(n)
		} else {
			seen[s] = 1
		}
		slugs[s] = true
	})
	return slugs
}

var linkTextRe = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)

// slug is GitHub's anchor for a heading: the text as rendered, lower-cased, every character
// but letters, digits, '-', '_' and spaces dropped, spaces turned to '-'.
func slug(heading string) string {
	heading = linkTextRe.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// forEachProseLine calls f with every line (numbered from 1) outside fenced code blocks.
func forEachProseLine(text string, f func(n int, line string)) {
	fence := ""
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		f(i+1, line)
	}
}
