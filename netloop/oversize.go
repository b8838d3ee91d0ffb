package netloop

import (
	"encoding/binary"
	"fmt"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// A send longer than Config.MaxFrame is answered, not just cut: RocketMQ
// answers a message body over its maxMessageSize with MESSAGE_ILLEGAL (13)
// and the limit, and its clients report that; a client whose connection is
// closed while it writes reports "connection reset by peer" instead, which
// names no cause. So when an impossible length arrives, the server reads
// the frame's header (its first bytes, which arrive with the length), and
// when it is a send it answers 13 with the limit and discards the frame's
// remaining bytes as they arrive, keeping at most one read of them (the
// client finishes its write, reads the answer, and the connection stays
// in step). Anything else over the limit closes the connection as before.

// maxOversizeHeader bounds the header read from an oversize frame: a send's
// header is some hundred bytes; a longer one closes the connection, as
// does one shorter than minOversizeHeader (no send header is: its fields
// alone take more), which is not waited for.
const (
	maxOversizeHeader = 64 << 10
	minOversizeHeader = 16
)

// sendCodes are the requests whose oversize frames are answered.
func isSendCode(code int32) bool {
	switch code {
	case remoting.SendMessage, remoting.SendMessageV2, remoting.SendBatchMessage,
		remoting.SendReplyMessage, remoting.SendReplyMessageV2:
		return true
	}
	return false
}

// oversizeHeader decodes the header of a frame of length n buffered in in
// (n past the limit). wait reports that more bytes are needed; cmd is nil
// when the frame is not worth answering (its header is too long or does
// not decode).
func oversizeHeader(in inbound, n int64) (cmd *remoting.Command, wait bool) {
	word, err := in.Peek(frameLengthSize + 4)
	if err != nil || len(word) < frameLengthSize+4 {
		return nil, true
	}
	h := int64(binary.BigEndian.Uint32(word[frameLengthSize:]) & 0xFFFFFF)
	st := remoting.SerializeType(word[frameLengthSize])
	if (st != remoting.SerializeJSON && st != remoting.SerializeRocketMQ) || h < minOversizeHeader || h > maxOversizeHeader || h+4 > n {
		return nil, false
	}
	need := frameLengthSize + 4 + int(h)
	if in.InboundBuffered() < need {
		return nil, true
	}
	b, err := in.Peek(need)
	if err != nil {
		return nil, true
	}
	cmd, err = remoting.DecodeFrame(b[frameLengthSize:])
	if err != nil {
		return nil, false
	}
	return cmd, false
}

// answerOversize answers a send of n bytes past the frame limit with
// MESSAGE_ILLEGAL and reports whether it did (else the connection is to be
// closed).
func (s *Server) answerOversize(c *Conn, cmd *remoting.Command, n int64) bool {
	if cmd.IsResponse() || cmd.IsOneway() || !isSendCode(cmd.Code) {
		return false
	}
	limit := s.cfg.MaxFrame
	if s.cfg.MessageLimit != nil {
		limit = s.cfg.MessageLimit()
	}
	remark := fmt.Sprintf("the message body size over max value, MAX: %d (this request holds %d bytes; "+
		"the broker's --max-message-size, RocketMQ's maxMessageSize; its frame limit is %d bytes)", limit, n, s.cfg.MaxFrame)
	s.stats.oversize.Add(1)
	s.sampled.Warn().Uint64("conn", c.id).Str("remote", c.remote).Int32("code", cmd.Code).Int64("bytes", n).
		Int("limit", limit).Int("max_frame", s.cfg.MaxFrame).Msg("remoting request over the frame limit answered MESSAGE_ILLEGAL, its bytes skipped")
	if err := c.Send(remoting.NewResponse(cmd, remoting.MessageIllegal, remark)); err != nil {
		s.log.Debug().Err(err).Str("remote", c.remote).Msg("remoting oversize answer not delivered")
	}
	return true
}
