package data

import (
	"bytes"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"selmix/core/npy"
	"selmix/internal/boundedfile"
)

// namesFile bounds a class-names file (K ≤ maxClasses names of
// reasonable length).
var namesFile = boundedfile.Limit{What: "class-names file", Max: 64 << 20}

// checkClassName returns why name cannot name a class, or "".
func checkClassName(name string) string {
	switch {
	case !utf8.ValidString(name):
		return "is not valid UTF-8"
	case strings.TrimSpace(name) == "":
		return "is blank"
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return "holds a control character"
	}
	return ""
}

// ReadClassNames reads K class names from a text file, one per line in
// class order (an optional final newline, surrounding spaces and \r line
// ends are ignored). A blank line, or more or fewer than K lines, is an
// error naming the file and line. Names may repeat (ImageNet-1k has two
// "crane" classes).
func ReadClassNames(path string, K int) ([]string, error) {
	b, err := boundedfile.ReadFile(path, namesFile)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	if len(b) == 0 {
		return nil, fmt.Errorf("%s: no class names (want %d lines, one per class)", path, K)
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) > K {
		return nil, fmt.Errorf("%s:%d: more lines than the K=%d classes (one name per line)", path, K+1, K)
	}
	names := make([]string, len(lines))
	for i, l := range lines {
		names[i] = strings.TrimSpace(strings.TrimSuffix(l, "\r"))
		if why := checkClassName(names[i]); why != "" {
			return nil, fmt.Errorf("%s:%d: class name %s", path, i+1, why)
		}
	}
	if len(names) < K {
		return nil, fmt.Errorf("%s: %d lines for K=%d classes (one name per line)", path, len(names), K)
	}
	return names, nil
}

// namesFromNPZ reads the class names array "names" of an archive: 1-D,
// strings, none blank. Its length is checked against K by the caller.
func namesFromNPZ(z *npy.NPZ) ([]string, error) {
	a, err := z.Open("names")
	if err != nil {
		return nil, err
	}
	defer a.Close()
	if len(a.Shape) != 1 {
		return nil, a.Errorf("class names have shape %s, want (K,)", npy.ShapeString(a.Shape))
	}
	names, err := a.ReadStrings()
	if err != nil {
		return nil, err
	}
	for k, n := range names {
		if why := checkClassName(n); why != "" {
			return nil, a.Errorf("class name %d %s", k, why)
		}
	}
	return names, nil
}
