package gateway_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxGatewayMethods bounds the methods declared on *Gateway: it assembles
// the stages, starts and stops them, and says what it serves; the work is
// the stages'.
const maxGatewayMethods = 12

// TestStagesStandOnTheirOwn holds the shape of the pipeline: no type in
// gateway keeps a *Gateway (a stage holds explicit fields for what it
// uses), at most maxGatewayMethods methods on *Gateway, and agent.Turn is
// built in one place of the module's production code.
func TestStagesStandOnTheirOwn(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	methods := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if n.Recv != nil && len(n.Recv.List) == 1 && isGatewayPtr(n.Recv.List[0].Type) {
					methods++
				}
			case *ast.StructType:
				for _, field := range n.Fields.List {
					if isGatewayPtr(field.Type) {
						t.Errorf("%s: a struct keeps a *Gateway (give the stage explicit fields)", fset.Position(field.Pos()))
					}
				}
			}
			return true
		})
	}
	if methods > maxGatewayMethods {
		t.Errorf("%d methods on *Gateway, at most %d: does the new one belong to a stage?", methods, maxGatewayMethods)
	}

	turns := 0
	for _, dir := range []string{".", "openaiapi", "reports", "memory", "router", "alerts", "privacy", "admin", "skillfiles"} {
		names, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if lit, ok := n.(*ast.CompositeLit); ok && len(lit.Elts) > 0 {
					if sel, ok := lit.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Turn" {
						if x, ok := sel.X.(*ast.Ident); ok && x.Name == "agent" {
							turns++
						}
					}
				}
				return true
			})
		}
	}
	if turns != 1 {
		t.Errorf("agent.Turn is built in %d places, want 1 (AgentRunner.NewTurn)", turns)
	}
}

func isGatewayPtr(e ast.Expr) bool {
	star, ok := e.(*ast.StarExpr)
	if !ok {
		return false
	}
	id, ok := star.X.(*ast.Ident)
	return ok && id.Name == "Gateway"
}
