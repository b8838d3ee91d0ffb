// Package remoting is RocketMQ's remoting wire protocol: the RemotingCommand
// model, its two header serializations (JSON and the ROCKETMQ binary form)
// and the length-prefixed frame that carries both.
//
// # Frame
//
// Every frame is one RemotingCommand. All integers are big-endian.
//
//	+----------------+----------------------------+-----------+---------+
//	| total length L | serialize type | header H  | header    | body    |
//	| int32          | 1 byte         | 3 bytes   | H bytes   | L-4-H   |
//	+----------------+----------------------------+-----------+---------+
//	                 '------ header-length word --'
//
// L counts every byte after the length field: 4 + H + len(body).
// The serialize type is 0 (JSON) or 1 (ROCKETMQ binary).
//
// # JSON header (serialize type 0)
//
// A UTF-8 JSON object with the fields code, language (a name such as "GO" or
// "JAVA"), version, opaque, flag, remark and extFields (string to string).
// Unknown fields are ignored; remark and extFields may be absent or null.
//
// # ROCKETMQ binary header (serialize type 1)
//
//	+------+------+---------+--------+------+-----------+--------+-----------+---------+
//	| code | lang | version | opaque | flag | remark len| remark | ext len E | ext     |
//	| i16  | u8   | i16     | i32    | i32  | i32       | bytes  | i32       | E bytes |
//	+------+------+---------+--------+------+-----------+--------+-----------+---------+
//
// ext is a run of entries: key length (i16), key, value length (i32), value.
//
// A response copies the request's opaque and sets FlagResponse; requests
// with FlagOneway expect no response. Responses are matched by opaque only,
// so they may be sent in any order.
package remoting

import "fmt"

// Flag bits of a RemotingCommand.
const (
	// FlagResponse marks a response (bit 0).
	FlagResponse int32 = 1 << 0
	// FlagOneway marks a request that expects no response (bit 1).
	FlagOneway int32 = 1 << 1
)

// SerializeType selects the header encoding of a frame.
type SerializeType byte

const (
	// SerializeJSON is the JSON header encoding (type byte 0).
	SerializeJSON SerializeType = 0
	// SerializeRocketMQ is the ROCKETMQ binary header encoding (type byte 1).
	SerializeRocketMQ SerializeType = 1
)

// String names the serialize type as RocketMQ does.
func (s SerializeType) String() string {
	switch s {
	case SerializeJSON:
		return "JSON"
	case SerializeRocketMQ:
		return "ROCKETMQ"
	}
	return fmt.Sprintf("SerializeType(%d)", byte(s))
}

// BrokerVersion is the MQVersion ordinal wheelmq reports (V5_3_3).
const BrokerVersion = 479

// Command is one RemotingCommand: a request or a response.
type Command struct {
	// Code is the request code in a request, the response code in a response.
	Code int32
	// Language is the sender's language name, e.g. "GO" or "JAVA".
	Language string
	// Version is the sender's MQVersion ordinal.
	Version int32
	// Opaque is the request id; a response copies it.
	Opaque int32
	// Flag holds FlagResponse and FlagOneway.
	Flag int32
	// Remark is human-readable text, usually an error description.
	Remark string
	// ExtFields is the custom header: every field as a string.
	ExtFields map[string]string
	// Ext, when set, writes the custom header when the command is encoded,
	// and ExtFields is not encoded (Field and SetField still use only
	// ExtFields). Decoding never sets it.
	Ext ExtWriter
	// Body is the opaque payload after the header.
	Body []byte
	// Serialize is the header encoding the command arrived in, or is to be
	// sent in.
	Serialize SerializeType
}

// IsResponse reports whether the command is a response.
func (c *Command) IsResponse() bool { return c.Flag&FlagResponse != 0 }

// IsOneway reports whether the command is a request that wants no answer.
func (c *Command) IsOneway() bool { return c.Flag&FlagOneway != 0 }

// NewRequest builds a request with the given code and fields, in JSON.
func NewRequest(code int32, ext map[string]string, body []byte) *Command {
	if ext == nil {
		ext = map[string]string{}
	}
	return &Command{Code: code, Language: "GO", Version: BrokerVersion, ExtFields: ext, Body: body}
}

// NewResponse builds the response to req with the given code and remark,
// in req's serialization, copying its opaque.
func NewResponse(req *Command, code int32, remark string) *Command {
	return &Command{
		Code:      code,
		Language:  "GO",
		Version:   BrokerVersion,
		Opaque:    req.Opaque,
		Flag:      FlagResponse,
		Remark:    remark,
		ExtFields: map[string]string{},
		Serialize: req.Serialize,
	}
}

// Field returns the extField key, or "" when absent.
func (c *Command) Field(key string) string {
	if c.ExtFields == nil {
		return ""
	}
	return c.ExtFields[key]
}

// SetField sets an extField, creating the map when needed.
func (c *Command) SetField(key, value string) {
	if c.ExtFields == nil {
		c.ExtFields = map[string]string{}
	}
	c.ExtFields[key] = value
}
