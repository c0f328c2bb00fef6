package v1_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// Every condition type and reason the API declares is one the operator sets (it appears
// in its code outside tests): a constant nothing sets would promise users a status they
// never see. (internal/ imports api/v1 as mooringv1 and api/v1beta1 as v1beta1, as the
// selectors looked for here.)
func TestEveryConditionAndReasonIsUsed(t *testing.T) {
	declared := map[string]string{} // qualified name -> file
	for pkg, file := range map[string]string{"mooringv1": "contract_conditions.go", "v1beta1": filepath.Join("..", "v1beta1", "contract_conditions.go")} {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				for _, n := range s.(*ast.ValueSpec).Names {
					declared[pkg+"."+n.Name] = file
				}
			}
		}
	}
	if len(declared) < 20 {
		t.Fatalf("read %d constants from the contract files; the parse found too few to mean anything", len(declared))
	}
	used := map[string]bool{}
	root := filepath.Join("..", "..", "internal")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		// A selector of the api packages as the code imports them (comments do not count).
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok {
					used[x.Name+"."+sel.Sel.Name] = true
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, file := range declared {
		if !used[name] {
			t.Errorf("%s (%s) is used nowhere in internal/ outside tests", name, file)
		}
	}
}
