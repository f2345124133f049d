package skills

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
)

// allowedProgram resolves a command skill's or stdio MCP server's program
// once, evaluating every symlink, and checks that resolved path against
// the allow-list (whose entries are resolved the same way). The result is
// what runs. Cleaning the path lexically first would be wrong: the kernel
// follows "bin/lnk" before applying "..", so "bin/lnk/../x" (lnk a symlink
// to another folder) is not "bin/x".
//
// Errors: the path cannot be resolved (other than not existing yet), or
// its resolved path is not allow-listed.
func allowedProgram(prog string, allowList []string) (string, error) {
	resolved, err := resolvePath(prog)
	if err != nil {
		return "", fmt.Errorf("%s cannot be resolved: %w", prog, unwrapPathError(err))
	}
	allowed := slices.ContainsFunc(allowList, func(a string) bool {
		ra, err := resolvePath(a)
		return err == nil && ra == resolved
	})
	switch {
	case allowed:
		return resolved, nil
	case resolved != filepath.Clean(prog):
		return "", fmt.Errorf("%s (resolved: %s) is not in the command allow-list", prog, resolved)
	}
	return "", fmt.Errorf("%s is not in the command allow-list", prog)
}

// resolvePath is realpath -m: symlinks evaluated as far as the path
// exists, the missing rest appended (a program installed later fails at
// call time with ErrMisconfigured, as before).
func resolvePath(p string) (string, error) {
	resolved, err := filepath.EvalSymlinks(p)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return resolved, err
	}
	dir := filepath.Dir(p)
	if dir == p {
		return p, nil
	}
	parent, err := resolvePath(dir)
	if err != nil {
		return "", err
	}
	return filepath.Join(parent, filepath.Base(p)), nil
}
