package pull

import (
	"errors"
	"testing"

	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/message"
)

// TestReadQueue reads records by queue offset, refuses offsets outside
// the queue and unknown queues, and counts nothing as served.
func TestReadQueue(t *testing.T) {
	r := newRig(t, storage.Options{})
	served := 0
	r.startWith(t, Options{Served: func(string, string, int, int) { served++ }})
	for i := int64(0); i < 3; i++ {
		r.put(t, "T", 1, "a", 1000+i)
	}
	type answer struct {
		rec []byte
		err error
	}
	read := func(pos QueuePos) answer {
		return callPull(t, r, func(reply func(answer)) any {
			return &ReadQueue{Pos: pos, Reply: func(rec []byte, err error) { reply(answer{append([]byte(nil), rec...), err}) }}
		})
	}
	a := read(QueuePos{"T", 1, 2})
	if a.err != nil {
		t.Fatal(a.err)
	}
	rec, _, err := message.Decode(a.rec)
	if err != nil || rec.QueueOffset != 2 || rec.StoreTimestamp != 1002 || string(rec.Body) != "body-2" {
		t.Fatalf("record at offset 2: %+v %v", rec, err)
	}
	for _, pos := range []QueuePos{{"T", 1, 3}, {"T", 1, -1}, {"T", 0, 0}, {"U", 1, 0}} {
		if a := read(pos); !errors.Is(a.err, ErrNoMessage) {
			t.Fatalf("%v: %v, want ErrNoMessage", pos, a.err)
		}
	}
	if served != 0 {
		t.Fatalf("ReadQueue counted %d pulls as served", served)
	}
}
