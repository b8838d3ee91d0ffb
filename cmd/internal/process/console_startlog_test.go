package process_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// TestStartLogNamesConsole: the start log names the console's URL, and
// that URL serves the console.
func TestStartLogNamesConsole(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	n := processtest.Start(t, processtest.Options{Metrics: true,
		Mutate:     func(c *pipeline.Config) { c.Logger = zerolog.New(logs).Level(zerolog.InfoLevel) },
		MutateNode: func(c *process.Config) { c.Console = true }})
	var url string
	for _, line := range strings.Split(logs.String(), "\n") {
		var rec struct{ Message, URL string }
		if json.Unmarshal([]byte(line), &rec) == nil && strings.HasPrefix(rec.Message, "web console ready") {
			url = rec.URL
		}
	}
	if want := "http://" + n.MetricsAddr() + "/"; url != want {
		t.Fatalf("start log names the console at %q, want %q", url, want)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET %s: %s %s", url, resp.Status, resp.Header.Get("Content-Type"))
	}
}
