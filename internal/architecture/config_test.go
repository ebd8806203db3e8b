package architecture

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// reader is the package that reads configurations, a run's recorded
// config.toml included (experiment.ParseRecorded, ReadRecorded): the one
// place that decodes them.
const reader = "core/experiment"

// otherTOML are the files outside reader that decode TOML, each a file of
// another kind, with the decoding calls each makes and why it may.
var otherTOML = map[string]struct {
	calls int
	why   string
}{
	"core/search/parse.go": {1, "a sweep spec (name, base_config, [base], [axes], [[rows]], [slurm], [asha]) is not a configuration; its keys are checked with experiment.Set"},
	"tui/keys/keys.go":     {1, "keys.toml holds the workbench's key bindings, not a configuration"},
}

// tomlDecoders are the functions of the TOML libraries that decode
// (BurntSushi/toml; pelletier/go-toml v1 and v2; naoina/toml). Their
// encoders (NewEncoder, Marshal) are not among them.
var tomlDecoders = []string{
	"Decode", "DecodeFile", "DecodeFS", "DecodeReader", "PrimitiveDecode", "Unmarshal", "NewDecoder",
	"Load", "LoadBytes", "LoadFile", "LoadReader", "Parse",
}

// tomlDecodes lists the calls in a Go file's source that decode TOML: a
// decoding function of an imported package whose path names toml, under
// whatever name the file imports it. A dot import of one counts as a call.
func tomlDecodes(fset *token.FileSet, name string, src any) ([]string, error) {
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []string
	local := map[string]bool{}
	for _, im := range f.Imports {
		path, _ := strconv.Unquote(im.Path.Value)
		if !strings.Contains(strings.ToLower(path), "toml") {
			continue
		}
		switch {
		case im.Name == nil:
			local["toml"] = true // the package name of every TOML library
		case im.Name.Name == ".":
			out = append(out, fset.Position(im.Pos()).String()+": dot import of "+path)
		case im.Name.Name != "_":
			local[im.Name.Name] = true
		}
	}
	if len(local) == 0 {
		return out, nil
	}
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); ok && local[x.Name] && slices.Contains(tomlDecoders, sel.Sel.Name) {
			out = append(out, fset.Position(call.Pos()).String()+": "+x.Name+"."+sel.Sel.Name)
		}
		return true
	})
	return out, nil
}

// A run's recorded config.toml has one reader: no Go file outside
// core/experiment decodes TOML, but those of otherTOML, which read other
// files. A package that needs a recorded key asks the reader, or the run
// store's accessors built on it (runs.Run.Recorded, runs.ReadConfig).
func TestOneConfigReader(t *testing.T) {
	fset := token.NewFileSet()
	found := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") || n == "testdata" || n == "vendor" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		calls, err := tomlDecodes(fset, filepath.ToSlash(rel), src)
		if err != nil {
			return err
		}
		if len(calls) > 0 {
			found[filepath.ToSlash(rel)] = calls
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	inReader := 0
	for file, calls := range found {
		if strings.HasPrefix(file, reader+"/") {
			inReader += len(calls)
			continue
		}
		other, ok := otherTOML[file]
		switch {
		case !ok:
			t.Errorf("%s decodes TOML outside %s:\n\t%s\nread a run's config.toml through its reader (experiment.ReadRecorded, runs.Run.Recorded); a file of another kind goes in otherTOML with the reason", file, reader, strings.Join(calls, "\n\t"))
		case len(calls) != other.calls:
			t.Errorf("%s makes %d TOML decoding calls, otherTOML allows it %d (%s):\n\t%s", file, len(calls), other.calls, other.why, strings.Join(calls, "\n\t"))
		}
	}
	for file, other := range otherTOML {
		if _, ok := found[file]; !ok {
			t.Errorf("otherTOML lists %s (%s), which decodes no TOML: drop it", file, other.why)
		}
	}
	// The witness: the scan finds the reader's own decoding.
	if inReader == 0 {
		t.Errorf("no TOML decoding found in %s: the check would prove nothing", reader)
	}
}

// tomlDecodes finds a decoding call under any import name, and passes
// over encoding and files that import no TOML library.
func TestTOMLDecodes(t *testing.T) {
	for _, c := range []struct {
		name, src string
		want      int
	}{
		{"burntsushi", `package p; import "github.com/BurntSushi/toml"; func f(s string, v any) { toml.Decode(s, v); toml.DecodeFile(s, v) }`, 2},
		{"renamed pelletier", `package p; import tml "github.com/pelletier/go-toml/v2"; func f(b []byte, v any) { tml.Unmarshal(b, v) }`, 1},
		{"a decoder", `package p; import ("os"; "github.com/BurntSushi/toml"); func f(v any) { toml.NewDecoder(os.Stdin).Decode(v) }`, 1},
		{"dot import", `package p; import . "github.com/BurntSushi/toml"; func f(s string, v any) { Decode(s, v) }`, 1},
		{"encoding only", `package p; import ("os"; "github.com/BurntSushi/toml"); func f(v any) { toml.NewEncoder(os.Stdout).Encode(v) }`, 0},
		{"no toml", `package p; import "encoding/json"; func f(b []byte, v any) { json.Unmarshal(b, v) }`, 0},
	} {
		got, err := tomlDecodes(token.NewFileSet(), c.name+".go", c.src)
		if err != nil || len(got) != c.want {
			t.Errorf("%s: %v (%v), want %d calls", c.name, got, err, c.want)
		}
	}
}
