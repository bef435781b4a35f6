// Package modroot finds the pgqcheck module's root folder, under whose testdata/ the suite keeps
// its cases, mutants and histories.
package modroot

import (
	"os"
	"path/filepath"
	"strings"
)

// Path is the pgqcheck module's path, as its go.mod declares it.
const Path = "github.com/pgqcheck/pgqcheck"

// Find is the pgqcheck module's root at or above dir: the first folder whose go.mod declares
// module Path.
func Find(dir string) (string, bool) {
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if f := strings.Fields(l); len(f) == 2 && f[0] == "module" && f[1] == Path {
					return dir, true
				}
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// Here is the pgqcheck module's root at or above the working directory.
func Here() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	return Find(dir)
}
