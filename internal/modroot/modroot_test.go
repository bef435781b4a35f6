package modroot

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFind(t *testing.T) {
	root := t.TempDir()
	inner := filepath.Join(root, "a", "b")
	other := filepath.Join(root, "a", "other")
	for _, d := range []string{inner, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(dir, text string) {
		if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(root, "module "+Path+"\n\ngo 1.22\n")
	write(other, "module example.com/other\n")
	if got, ok := Find(inner); !ok || got != root {
		t.Errorf("Find(%s) = %q, %v; want %q", inner, got, ok, root)
	}
	if got, ok := Find(other); !ok || got != root {
		t.Errorf("Find(%s) = %q, %v; want %q (a go.mod of another module is passed over)", other, got, ok, root)
	}
	if got, ok := Find(filepath.Dir(root)); ok {
		t.Errorf("Find above the module = %q, want none", got)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := Here(); !ok || filepath.Join(got, "internal", "modroot") != wd {
		t.Errorf("Here() = %q, %v; want the module holding %s", got, ok, wd)
	}
}
