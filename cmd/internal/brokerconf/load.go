package brokerconf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/wheelmq/wheelmq/netloop/remoting/javaprops"
)

// MaxFileSize bounds a configuration file (a broker.conf is a few KiB).
const MaxFileSize = 1 << 20

// Load reads the configuration file at path: YAML when its name ends in
// .yaml or .yml (keys are flag names, known reports which exist), else a
// RocketMQ broker.conf in Java properties syntax (keys mapped by Mapping).
// The error is for a file that cannot be read at all; bad lines are in
// File.Problems.
func Load(path string, known func(flag string) bool) (*File, error) {
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
		f.mapYAML(data, known)
	case ".toml":
		return nil, fmt.Errorf("config file %s: TOML is not read; use a .yaml file with the flag names as keys, or a RocketMQ broker.conf", path)
	default:
		entries, err := javaprops.Parse(data)
		var le *javaprops.LineError
		if errors.As(err, &le) {
			f.problem(le.Line, "%v", le.Err)
		}
		f.mapBrokerConf(entries)
	}
	return f, nil
}

// mapYAML reads a flat YAML mapping of flag names to scalars (a list of
// scalars is joined with ';', for --namesrv).
func (f *File) mapYAML(data []byte, known func(string) bool) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		f.Problems = append(f.Problems, fmt.Sprintf("%s: %v", f.Path, err))
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
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		name := strings.TrimPrefix(k.Value, "--")
		if k.Kind != yaml.ScalarNode {
			f.problem(k.Line, "a key must be a flag name")
			continue
		}
		if name == "config" || known == nil || !known(name) {
			f.ignore(k.Value, k.Line, "not a wheelmq flag")
			continue
		}
		val, err := yamlScalar(v)
		if err != nil {
			f.problem(v.Line, "%s: %v", k.Value, err)
			continue
		}
		f.add(Setting{Flag: name, Value: val, Key: k.Value, Line: k.Line})
	}
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
