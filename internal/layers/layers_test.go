package layers

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/splitbrain/splitbrain/"

// floors are the product card's folders, top to bottom: a package may
// import one on a lower floor, or one of its own folder, never one above
// it nor a neighbour on its own floor.
var floors = map[string]int{
	"e2e":       8,
	"cmd":       7,
	"harness":   6,
	"results":   5,
	"nemesis":   4,
	"workloads": 4,
	"targets":   3,
	"checkers":  2,
	"contract":  1,
	"history":   1,
	"internal":  0,
}

func folder(importPath string) string {
	top, _, _ := strings.Cut(strings.TrimPrefix(importPath, module), "/")
	return top
}

func TestNoImportRunsBackUp(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		from := folder(filepath.ToSlash(rel))
		fromFloor, ok := floors[from]
		if !ok {
			t.Errorf("%s: folder %s has no floor: give it one in floors", rel, from)
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !strings.HasPrefix(p, module) {
				continue
			}
			to := folder(p)
			checked++
			if to == from {
				continue
			}
			if floors[to] >= fromFloor {
				t.Errorf("%s imports %s: %s (floor %d) must not import %s (floor %d)", rel, p, from, fromFloor, to, floors[to])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("only %d imports of splitbrain's own were read: the walk missed the tree", checked)
	}
}

// The test reads the tree from two floors up: it must be where it thinks.
func TestRootIsTheModule(t *testing.T) {
	b, err := os.ReadFile("../../go.mod")
	if err != nil || !strings.Contains(string(b), "module "+strings.TrimSuffix(module, "/")) {
		t.Fatalf("../../go.mod is not splitbrain's: %v", err)
	}
}
