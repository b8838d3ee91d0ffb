package remoting

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
)

// ExtField is one extFields entry of a frame written by AppendResponseFrame.
type ExtField struct {
	Key   string
	Value []byte
}

// AppendResponseFrame appends the frame of a response, without building a
// Command: header encoding st, the request's opaque, FlagResponse, language
// GO, version BrokerVersion, the given code and remark, ext in the given
// order and body. With ext sorted by key the bytes are those AppendFrame
// writes for the same response (NewResponse plus SetField). On error dst
// is returned unchanged.
func AppendResponseFrame(dst []byte, st SerializeType, opaque, code int32, remark string, ext []ExtField,
	body []byte) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0) // length field and header word, patched below
	switch st {
	case SerializeJSON:
		dst = append(dst, `{"code":`...)
		dst = strconv.AppendInt(dst, int64(code), 10)
		dst = append(dst, `,"language":"GO","version":`...)
		dst = strconv.AppendInt(dst, BrokerVersion, 10)
		dst = append(dst, `,"opaque":`...)
		dst = strconv.AppendInt(dst, int64(opaque), 10)
		dst = append(dst, `,"flag":`...)
		dst = strconv.AppendInt(dst, int64(FlagResponse), 10)
		dst = append(dst, `,"remark":`...)
		dst = appendJSONString(dst, remark)
		dst = append(dst, `,"extFields":{`...)
		for i, f := range ext {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, f.Key)
			dst = append(dst, ':')
			dst = appendJSONText(dst, f.Value)
		}
		dst = append(dst, "}}"...)
	case SerializeRocketMQ:
		if code < math.MinInt16 || code > math.MaxInt16 {
			return dst[:start], fmt.Errorf("remoting encode binary header: code %d does not fit int16: %w", code, ErrMalformed)
		}
		dst = binary.BigEndian.AppendUint16(dst, uint16(int16(code)))
		dst = append(dst, languageCode("GO"))
		dst = binary.BigEndian.AppendUint16(dst, uint16(int16(BrokerVersion)))
		dst = binary.BigEndian.AppendUint32(dst, uint32(opaque))
		dst = binary.BigEndian.AppendUint32(dst, uint32(FlagResponse))
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(remark)))
		dst = append(dst, remark...)
		extAt := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		for _, f := range ext {
			if len(f.Key) > math.MaxInt16 {
				return dst[:start], fmt.Errorf("remoting encode binary header: key of %d bytes: %w", len(f.Key), ErrMalformed)
			}
			dst = binary.BigEndian.AppendUint16(dst, uint16(len(f.Key)))
			dst = append(dst, f.Key...)
			dst = binary.BigEndian.AppendUint32(dst, uint32(len(f.Value)))
			dst = append(dst, f.Value...)
		}
		binary.BigEndian.PutUint32(dst[extAt:], uint32(len(dst)-extAt-4))
	default:
		return dst[:start], fmt.Errorf("remoting encode code %d: serialize type %d: %w", code, byte(st), ErrMalformed)
	}
	h := len(dst) - start - lengthFieldSize - headerWordSize
	if h > maxHeaderLen || int64(headerWordSize+h+len(body)) > math.MaxInt32 {
		return dst[:start], fmt.Errorf("remoting encode code %d: header %d bytes, body %d: %w", code, h, len(body), ErrFrameTooLarge)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(headerWordSize+h+len(body)))
	binary.BigEndian.PutUint32(dst[start+lengthFieldSize:], uint32(st)<<24|uint32(h))
	return append(dst, body...), nil
}
