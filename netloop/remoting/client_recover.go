package remoting

import (
	"fmt"

	"github.com/wheelmq/wheelmq/actors/recovery"
)

// goOwned runs f on a goroutine of the client, counted in wg (Close waits
// for it). A panic in f is logged with the stack and closes the client
// with the panic as the cause: every pending call fails with it, and the
// process goes on.
func (c *Client) goOwned(kind string, f func()) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if p := recovery.Catch(f); p != nil {
			recovery.Log(c.log, p, "remoting client "+kind)
			c.shutdown(fmt.Errorf("remoting client %s: %w", kind, p))
		}
	}()
}

// onRequest runs OnRequest for req; a panic in it is logged and answered
// SYSTEM_ERROR, and the connection serves on.
func (c *Client) onRequest(req *Command) (resp *Command) {
	if p := recovery.Catch(func() { resp = c.opts.OnRequest(req) }); p != nil {
		recovery.Log(c.log.With().Int32("opaque", req.Opaque).Logger(), p, fmt.Sprintf("remoting client request code %d", req.Code))
		return NewResponse(req, SystemError, fmt.Sprintf("the client failed on request code %d", req.Code))
	}
	return resp
}
