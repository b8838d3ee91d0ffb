package console

// The Configuration page (/config): the broker's configuration in force
// (the keys of GET_BROKER_CONFIG), the run-time changeable ones editable by
// an admin through the same broker API call as UPDATE_BROKER_CONFIG, so
// with the same allow-list and checks. No credential is ever listed.

import (
	"context"
	"net/http"
	"strings"
)

// ConfigBackend is what the Configuration page asks of the broker (admin
// calls of the broker API).
type ConfigBackend interface {
	// BrokerConfig is the configuration in force.
	BrokerConfig(ctx context.Context, c Credentials) (BrokerConfig, error)
	// UpdateBrokerConfig changes run-time keys, all or none.
	UpdateBrokerConfig(ctx context.Context, c Credentials, values map[string]string) error
}

// BrokerConfig is the configuration in force.
type BrokerConfig struct {
	// Version counts the run-time changes since the start.
	Version int64
	Keys    []ConfigKey
}

// ConfigKey is one key: Changeable ones may be changed at run time.
type ConfigKey struct {
	Key, Value string
	Changeable bool
}

// configData is the Configuration page.
type configData struct {
	C                   BrokerConfig
	Changeable, Fixed   []ConfigKey
	Filter              string
	ChangeableN, FixedN int
}

func (c *Console) configPage(ctx context.Context, r *http.Request, ss session, v *view) error {
	v.Title, v.Page = "Configuration", "config"
	d := &configData{Filter: strings.TrimSpace(r.URL.Query().Get("q"))}
	v.Data = d
	cfg, err := c.b.BrokerConfig(ctx, ss.creds)
	if err != nil {
		return err
	}
	d.C = cfg
	lq := strings.ToLower(d.Filter)
	for _, k := range cfg.Keys {
		if k.Changeable {
			d.ChangeableN++
		} else {
			d.FixedN++
		}
		if lq != "" && !strings.Contains(strings.ToLower(k.Key), lq) {
			continue
		}
		if k.Changeable {
			d.Changeable = append(d.Changeable, k)
		} else {
			d.Fixed = append(d.Fixed, k)
		}
	}
	return nil
}

// updateConfig changes one key (the form of its row).
func (c *Console) updateConfig(ctx context.Context, r *http.Request, ss session) (string, string, error) {
	key, value := r.PostForm.Get("key"), strings.TrimSpace(r.PostForm.Get("value"))
	if key == "" {
		return "/config", "", errorf("no key")
	}
	if err := c.b.UpdateBrokerConfig(ctx, ss.creds, map[string]string{key: value}); err != nil {
		return "/config", "", err
	}
	return "/config", key + " set to " + value, nil
}
