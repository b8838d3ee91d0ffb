package remoting

// What a Client adds for a secured server: requests signed just before
// they are encoded (ClientOptions.Sign) and TLS (ClientOptions.TLS).

import (
	"cmp"
	"crypto/tls"
	"slices"
	"sync"
)

// TLS reports whether the client speaks TLS, and the state of its
// connection when it does.
func (c *Client) TLS() (tls.ConnectionState, bool) {
	if tc, ok := c.conn.(*tls.Conn); ok {
		return tc.ConnectionState(), true
	}
	return tls.ConnectionState{}, false
}

// Field is one header field of a request (see ClientOptions.Sign).
type Field struct {
	Key, Value string
}

// Fields is a run of header fields written in their order: the Ext of a
// signed request.
type Fields []Field

// WriteExt writes every field in order.
func (f Fields) WriteExt(e *ExtEncoder) {
	for _, x := range f {
		e.String(x.Key, x.Value)
	}
}

// signScratch is the signed copy of one request, pooled: its field slice
// is reused by the next request signed.
type signScratch struct {
	cmd    Command
	fields Fields
	enc    ExtEncoder // collects an Ext's fields into fields
}

// maxKeptSignFields is the largest field slice a signScratch keeps.
const maxKeptSignFields = 64

var signScratches = sync.Pool{New: func() any { return &signScratch{fields: make(Fields, 0, 16)} }}

// wire returns the command to encode for req: req itself, or with
// ClientOptions.Sign a signed copy, whose scratch goes back to its pool
// with release once the frame is encoded (a nil scratch releases nothing).
func (c *Client) wire(req *Command) (*Command, *signScratch) {
	if c.opts.Sign == nil {
		return req, nil
	}
	s := signScratches.Get().(*signScratch)
	s.fields = s.fields[:0]
	if req.Ext != nil {
		s.enc = ExtEncoder{collect: &s.fields} // in the pooled scratch: no allocation
		req.Ext.WriteExt(&s.enc)
		s.enc = ExtEncoder{}
	} else {
		for k, v := range req.ExtFields {
			s.fields = append(s.fields, Field{k, v})
		}
	}
	f := s.fields
	if !slices.IsSortedFunc(f, compareKeys) { // an Ext written in key order needs no sort
		slices.SortFunc(f, compareKeys)
	}
	s.fields = c.opts.Sign(req, f)
	s.cmd = *req
	s.cmd.Ext, s.cmd.ExtFields = &s.fields, nil
	return &s.cmd, s
}

// compareKeys orders fields by key, in byte order.
func compareKeys(a, b Field) int { return cmp.Compare(a.Key, b.Key) }

// release clears s and puts it back in its pool.
func (s *signScratch) release() {
	if s == nil {
		return
	}
	s.cmd = Command{}
	if cap(s.fields) > maxKeptSignFields {
		return
	}
	clear(s.fields[:cap(s.fields)]) // drop the references to the request's strings
	s.fields = s.fields[:0]
	signScratches.Put(s)
}
