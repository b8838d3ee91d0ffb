package meta

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestRequestModesRoundTrip: modes saved are loaded back (sorted); a file
// in RocketMQ's layout loads; a missing file is no modes; a file with a
// mode other than PULL or POP falls back to the backup.
func TestRequestModesRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "messageRequestMode.json")
	if got, err := LoadRequestModes(nil, path); err != nil || len(got) != 0 {
		t.Fatalf("missing file: %v, %v", got, err)
	}
	want := []RequestMode{
		{Topic: "a", ConsumerGroup: "g2", Mode: RequestModePull},
		{Topic: "b", ConsumerGroup: "g1", Mode: RequestModePop, PopShareQueueNum: 2},
		{Topic: "a", ConsumerGroup: "g1", Mode: RequestModePop},
	}
	if err := SaveRequestModes(nil, path, want); err != nil {
		t.Fatal(err)
	}
	got, err := LoadRequestModes(nil, path)
	if err != nil {
		t.Fatal(err)
	}
	SortRequestModes(want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("loaded %+v, want %+v", got, want)
	}
	java := `{"messageRequestModeMap":{"t":{"cg":{"consumerGroup":"cg","mode":"POP","popShareQueueNum":0,"topic":"t"}}}}`
	if err := os.WriteFile(path, []byte(java), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := LoadRequestModes(nil, path); err != nil || len(got) != 1 || got[0] != (RequestMode{Topic: "t", ConsumerGroup: "cg", Mode: RequestModePop}) {
		t.Fatalf("RocketMQ's file: %+v, %v", got, err)
	}
	if err := SaveRequestModes(nil, path, want); err != nil { // the RocketMQ file becomes the backup
		t.Fatal(err)
	}
	bad := `{"messageRequestModeMap":{"t":{"cg":{"mode":"PUSH"}}}}`
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := LoadRequestModes(nil, path); err != nil || len(got) != 1 || got[0].Topic != "t" {
		t.Fatalf("a bad file did not fall back to its backup: %+v, %v", got, err)
	}
}
