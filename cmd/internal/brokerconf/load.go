package brokerconf

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/wheelmq/wheelmq/cmd/internal/suggest"
	"github.com/wheelmq/wheelmq/netloop/remoting/javaprops"
)

// MaxFileSize bounds a configuration file (a broker.conf is a few KiB).
const MaxFileSize = 1 << 20

// Load reads the configuration file at path: YAML when its name ends in
// .yaml or .yml (keys are the names in flags), else a RocketMQ broker.conf
// in Java properties syntax (keys mapped by Mapping, or allow-listed in
// Ignore). The error is for a file that cannot be read at all; every bad
// line of a file that can is in File.Problems, each with its own line
// number: a syntax error, a byte that is not UTF-8, an unknown key (with
// the closest known one when one is close) or a bad value.
func Load(path string, flags []string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("config file %s: %d bytes, more than %d", path, len(data), MaxFileSize)
	}
	f := &File{Path: path}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		f.mapYAML(data, flags)
	case ".toml":
		return nil, fmt.Errorf("config file %s: TOML is not read; use a .yaml file with the flag names as keys, or a RocketMQ broker.conf", path)
	default:
		entries, errs := javaprops.ParseAll(data)
		for _, le := range errs {
			f.problem(le.Line, "%v", le.Err)
		}
		f.mapBrokerConf(entries, flags)
	}
	f.sortProblems()
	return f, nil
}

// mapYAML reads a flat YAML mapping of flag names to scalars (a list of
// scalars is joined with ';', for --namesrv).
func (f *File) mapYAML(data []byte, flags []string) {
	if f.utf8Lines(data) {
		return // yaml.v3 would stop at the first one, with the wrong line
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		f.problem(yamlErrorLine(data), "%s", strings.TrimPrefix(yamlLineRE.ReplaceAllString(err.Error(), ""), "yaml: "))
		return
	}
	if len(doc.Content) == 0 {
		return // empty file
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		f.problem(root.Line, "want a mapping of flag names to values (data: /var/lib/wheelmq)")
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		name := strings.TrimPrefix(k.Value, "--")
		switch {
		case k.Kind != yaml.ScalarNode:
			f.problem(k.Line, "a key must be a flag name")
			continue
		case name == "config":
			f.problem(k.Line, "config: a configuration file cannot name another one")
			continue
		case !slices.Contains(flags, name):
			f.problem(k.Line, "unknown key %q: not a wheelmq flag%s", k.Value, suggest.DidYouMean(name, flags, ""))
			continue
		}
		if first, dup := seen[name]; dup {
			f.problem(k.Line, "%s is given twice (first on line %d)", k.Value, first)
			continue
		}
		seen[name] = k.Line
		val, err := yamlScalar(v)
		if err != nil {
			f.problem(v.Line, "%s: %v", k.Value, err)
			continue
		}
		f.add(Setting{Flag: name, Value: val, Key: k.Value, Line: k.Line})
	}
}

// yamlLineRE is the line yaml.v3 puts in its messages: the line where the
// construct holding the error starts, not always the error's own line.
var yamlLineRE = regexp.MustCompile(`^yaml: line \d+: `)

// maxBisectLines bounds the files whose syntax error is located by
// parsing their prefixes (a configuration file has tens of lines).
const maxBisectLines = 1000

// yamlErrorLine returns the line of a YAML syntax error: the line after
// the longest prefix of whole lines that parses. (yaml.v3's message names
// the line a flow collection or block starts on, sometimes counted from
// 0, for an error inside it.) 0 when the file is too long to look.
func yamlErrorLine(data []byte) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > maxBisectLines {
		return 0
	}
	var n yaml.Node
	lastOK, end := 0, 0
	for i, l := range lines {
		end += len(l)
		if yaml.Unmarshal(data[:end], &n) == nil {
			lastOK = i + 1
		}
	}
	return min(lastOK+1, len(lines))
}

// yamlScalar returns a scalar's text, or a list of scalars joined by ';'.
func yamlScalar(n *yaml.Node) (string, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		return n.Value, nil
	case yaml.SequenceNode:
		parts := make([]string, 0, len(n.Content))
		for _, c := range n.Content {
			if c.Kind != yaml.ScalarNode {
				return "", errors.New("a list may hold only plain values")
			}
			parts = append(parts, c.Value)
		}
		return strings.Join(parts, ";"), nil
	}
	return "", errors.New("want a plain value (or a list of them)")
}

// utf8Lines records a problem for every line that is not UTF-8 text and
// reports whether there was one.
func (f *File) utf8Lines(data []byte) bool {
	bad := false
	for i, l := range bytes.Split(data, []byte("\n")) {
		if !utf8.Valid(l) {
			bad = true
			col := 0
			for col < len(l) {
				r, size := utf8.DecodeRune(l[col:])
				if r == utf8.RuneError && size <= 1 {
					break
				}
				col += size
			}
			f.problem(i+1, "not UTF-8 text (a byte %#02x at column %d)", l[col], col+1)
		}
	}
	return bad
}
