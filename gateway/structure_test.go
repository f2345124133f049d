package gateway_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
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

// TestNoStageReachesBackAndOneHelperSetsUpPeriodicJobs completes
// TestStagesStandOnTheirOwn: no function in gateway begins by reaching
// back to the Gateway (g := x.g, 49 before #34), and the module's
// production code sets up a periodic job only through LeaderJob (six
// hand-written setups before #34).
func TestNoStageReachesBackAndOneHelperSetsUpPeriodicJobs(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	periodic := map[string]int{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != ".." && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		inGateway := filepath.Dir(path) == filepath.Join("..", "gateway")
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "NewPeriodicJob" {
					periodic[path]++
				}
			case *ast.FuncDecl:
				if !inGateway || n.Body == nil || len(n.Body.List) == 0 {
					return true
				}
				if as, ok := n.Body.List[0].(*ast.AssignStmt); ok && as.Tok == token.DEFINE && len(as.Rhs) == 1 {
					if sel, ok := as.Rhs[0].(*ast.SelectorExpr); ok && sel.Sel.Name == "g" {
						t.Errorf("%s: %s begins by reaching back to the Gateway (:= x.g)", fset.Position(n.Pos()), n.Name.Name)
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(periodic) != 1 || periodic[filepath.Join("..", "gateway", "leaderjob.go")] != 1 {
		t.Errorf("river.NewPeriodicJob called in %v, want once, in gateway/leaderjob.go (LeaderJob)", periodic)
	}
}
