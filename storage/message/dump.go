package message

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"
)

// How many bytes Dump prints: of a field in hex, of the body quoted.
const (
	dumpHexMax  = 20
	dumpBodyMax = 64
)

// Dump writes a field-by-field dissection of the record at the start of b to
// w: one line per field with its offset, size, raw hex and meaning, then one
// line per property. It is meant for golden files and inspection tools, and
// returns the Decode error for malformed input.
func Dump(w io.Writer, b []byte) error {
	l, err := ParseLayout(b)
	if err != nil {
		return err
	}
	r, _, err := Decode(b)
	if err != nil {
		return err
	}
	var sb strings.Builder
	field := func(off, size int, name, meaning string) {
		raw := hex.EncodeToString(b[off : off+min(size, dumpHexMax)])
		if size > dumpHexMax {
			raw += ".."
		}
		fmt.Fprintf(&sb, "%04d %3d %-16s %-42s %s\n", off, size, name, raw, meaning)
	}
	magic := "V1"
	topicLenSize := 1
	if l.Magic == MagicV2 {
		magic, topicLenSize = "V2", 2
	}
	be := binary.BigEndian
	fmt.Fprintf(&sb, "%-4s %3s %-16s %-42s %s\n", "off", "len", "field", "hex", "value")
	field(OffTotalSize, 4, "TOTALSIZE", fmt.Sprint(l.Size))
	field(OffMagic, 4, "MAGICCODE", magic)
	field(OffBodyCRC, 4, "BODYCRC", fmt.Sprint(PeekBodyCRC(b)))
	field(OffQueueID, 4, "QUEUEID", fmt.Sprint(r.QueueID))
	field(OffFlag, 4, "FLAG", fmt.Sprint(r.Flag))
	field(OffQueueOffset, 8, "QUEUEOFFSET", fmt.Sprint(r.QueueOffset))
	field(OffPhysicalOffset, 8, "PHYSICALOFFSET", fmt.Sprint(r.PhysicalOffset))
	field(OffSysFlag, 4, "SYSFLAG", fmt.Sprintf("%#x", r.SysFlag))
	field(OffBornTimestamp, 8, "BORNTIMESTAMP", fmt.Sprint(r.BornTimestamp))
	field(OffBornHost, l.BornHostLen, "BORNHOST", r.BornHost.String())
	field(l.StoreTimestampOff, 8, "STORETIMESTAMP", fmt.Sprint(r.StoreTimestamp))
	field(l.StoreHostOff, l.StoreHostLen, "STOREHOST", r.StoreHost.String())
	field(l.ReconsumeTimesOff, 4, "RECONSUMETIMES", fmt.Sprint(r.ReconsumeTimes))
	field(l.ReconsumeTimesOff+4, 8, "PREPAREDTXOFFSET", fmt.Sprint(r.PreparedTransactionOffset))
	field(l.BodyOff-4, 4, "BODYLEN", fmt.Sprint(l.BodyLen))
	body := r.Body[:min(len(r.Body), dumpBodyMax)]
	suffix := ""
	if len(body) < len(r.Body) {
		suffix = "..."
	}
	field(l.BodyOff, l.BodyLen, "BODY", fmt.Sprintf("%q%s", body, suffix))
	field(l.TopicOff-topicLenSize, topicLenSize, "TOPICLEN", fmt.Sprint(l.TopicLen))
	field(l.TopicOff, l.TopicLen, "TOPIC", fmt.Sprintf("%q", r.Topic))
	field(l.PropsOff-2, 2, "PROPSLEN", fmt.Sprint(int16(be.Uint16(b[l.PropsOff-2:]))))
	field(l.PropsOff, l.PropsLen, "PROPERTIES", fmt.Sprintf("%d bytes", l.PropsLen))
	props := DecodeProperties(r.Properties)
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&sb, "  property %s = %q\n", k, props[k])
	}
	fmt.Fprintf(&sb, "  offsetMsgId %s\n", r.OffsetMsgID())
	_, err = io.WriteString(w, sb.String())
	return err
}
