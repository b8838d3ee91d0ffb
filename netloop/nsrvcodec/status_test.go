package nsrvcodec

import (
	"errors"
	"fmt"
	"testing"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// Every status of the one table has its own response code, and the
// decoder's refusals map through the same table.
func TestWireCodes(t *testing.T) {
	seen := map[int32]namesrv.Status{}
	n := 0
	for s := namesrv.Status(0); s.String() != "UNKNOWN"; s++ {
		n++
		code, ok := wireCodes[s]
		if !ok {
			t.Errorf("status %v has no response code", s)
			continue
		}
		if other, dup := seen[code]; dup {
			t.Errorf("statuses %v and %v share response code %d", other, s, code)
		}
		seen[code] = s
	}
	if n != len(wireCodes) {
		t.Errorf("%d statuses, %d response codes", n, len(wireCodes))
	}
	req := &remoting.Command{Code: remoting.GetKVConfig, Opaque: 9}
	for _, c := range []struct {
		err  error
		code int32
	}{
		{fmt.Errorf("%w: x", namesrv.ErrInvalidValue), remoting.InvalidParameter},
		{fmt.Errorf("%w: x", namesrv.ErrMissingField), remoting.SystemError},
		{errors.New("the custom field <cluster> is null"), remoting.SystemError},
		{errUnsupported, remoting.RequestCodeNotSupported},
	} {
		if resp := Refusal(req, c.err); resp.Code != c.code || resp.Opaque != 9 || !resp.IsResponse() {
			t.Errorf("%v: answered %d (opaque %d), want %d", c.err, resp.Code, resp.Opaque, c.code)
		}
	}
}
