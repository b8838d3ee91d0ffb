package meta

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// Message request modes (RocketMQ MessageRequestMode), set per (group,
// topic) by SET_MESSAGE_REQUEST_MODE (401).
const (
	RequestModePull = "PULL"
	RequestModePop  = "POP"
)

// RequestMode is the consumption model set for one (group, topic): the
// entries of RocketMQ's SetMessageRequestModeRequestBody.
type RequestMode struct {
	Topic            string `json:"topic"`
	ConsumerGroup    string `json:"consumerGroup"`
	Mode             string `json:"mode"`
	PopShareQueueNum int32  `json:"popShareQueueNum"`
}

// requestModesFile is the JSON shape of messageRequestMode.json, as
// RocketMQ's MessageRequestModeManager writes it: topic -> group -> entry.
type requestModesFile struct {
	MessageRequestModeMap map[string]map[string]RequestMode `json:"messageRequestModeMap"`
}

// parseRequestModes decodes and checks a messageRequestMode.json.
func parseRequestModes(data []byte) ([]RequestMode, error) {
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return nil, fmt.Errorf("not a JSON object")
	}
	var f requestModesFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	var out []RequestMode
	for topic, groups := range f.MessageRequestModeMap {
		for group, m := range groups {
			m.Topic, m.ConsumerGroup = topic, group
			if m.Mode != RequestModePull && m.Mode != RequestModePop {
				return nil, fmt.Errorf("topic %q group %q: mode %q is neither PULL nor POP", topic, group, m.Mode)
			}
			out = append(out, m)
		}
	}
	SortRequestModes(out)
	return out, nil
}

// SortRequestModes orders modes by topic, then group.
func SortRequestModes(modes []RequestMode) {
	slices.SortFunc(modes, func(a, b RequestMode) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return strings.Compare(a.ConsumerGroup, b.ConsumerGroup)
	})
}

// LoadRequestModes reads messageRequestMode.json (falling back to its .bak
// file like the other configuration files); a missing file is no modes.
func LoadRequestModes(fs vfs.FS, path string, opts ...Option) ([]RequestMode, error) {
	o := buildOptions(opts)
	modes, _, err := loadWithBackup(fs, path, o.log, parseRequestModes)
	if err != nil {
		return nil, fmt.Errorf("load request modes: %w", err)
	}
	return modes, nil
}

// EncodeRequestModes renders modes as messageRequestMode.json.
func EncodeRequestModes(modes []RequestMode) ([]byte, error) {
	f := requestModesFile{MessageRequestModeMap: map[string]map[string]RequestMode{}}
	for _, m := range modes {
		g := f.MessageRequestModeMap[m.Topic]
		if g == nil {
			g = map[string]RequestMode{}
			f.MessageRequestModeMap[m.Topic] = g
		}
		g[m.ConsumerGroup] = m
	}
	b, err := json.MarshalIndent(f, "", "\t")
	if err != nil {
		return nil, fmt.Errorf("encode request modes: %w", err)
	}
	return b, nil
}

// SaveRequestModes writes modes to path atomically, keeping the previous
// content as the .bak file.
func SaveRequestModes(fs vfs.FS, path string, modes []RequestMode) error {
	b, err := EncodeRequestModes(modes)
	if err != nil {
		return err
	}
	return saveWithBackup(fs, path, b, func(cur []byte) bool {
		_, err := parseRequestModes(cur)
		return err == nil
	})
}
