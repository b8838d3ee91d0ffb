package namesrv

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strconv"
	"strings"

	"github.com/wheelmq/wheelmq/storage/lenient"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// MaxInflatedBody caps the inflated size of a compressed REGISTER_BROKER
// body (a defence against deflate bombs; frames are at most 16 MiB).
const MaxInflatedBody = 64 << 20

// bodyCRC32 is RocketMQ's UtilAll.crc32: CRC-32/IEEE masked to 31 bits.
func bodyCRC32(body []byte) int64 {
	return int64(crc32.ChecksumIEEE(body) & 0x7FFFFFFF)
}

// checkBodyCRC verifies the header bodyCrc32 (0 = not sent) against body,
// accepting Java's masked value and the plain CRC-32 (signed or unsigned).
func checkBodyCRC(body []byte, want int64) error {
	if want == 0 {
		return nil
	}
	sum := crc32.ChecksumIEEE(body)
	if want == int64(sum&0x7FFFFFFF) || want == int64(sum) || want == int64(int32(sum)) {
		return nil
	}
	return fmt.Errorf("%w: header bodyCrc32 %d, body crc32 %d (masked %d)",
		ErrChecksum, want, sum, sum&0x7FFFFFFF)
}

// decodeRegisterBody decodes a RegisterBrokerBody, JSON or compressed. An
// empty body is an empty topic table with a zero DataVersion (as in Java).
func decodeRegisterBody(body []byte, compressed bool) (map[string]meta.TopicConfig, DataVersion, error) {
	if len(body) == 0 {
		return map[string]meta.TopicConfig{}, DataVersion{}, nil
	}
	if compressed {
		return decodeCompressedBody(body, MaxInflatedBody)
	}
	var rb registerBodyWire
	if err := json.Unmarshal(body, &rb); err != nil {
		return nil, DataVersion{}, fmt.Errorf("%w: register broker body: %v", ErrBadBody, err)
	}
	w := rb.TopicConfigSerializeWrapper
	topics := make(map[string]meta.TopicConfig, len(w.TopicConfigTable))
	for name, tc := range w.TopicConfigTable {
		topics[name] = tc.config()
	}
	return topics, w.DataVersion.dataVersion(), nil
}

// The uncompressed RegisterBrokerBody as it is decoded: values are read
// leniently, as fastjson reads them on a Java name server (numbers as
// strings and the reverse, booleans as "true"/1, enums by name or ordinal,
// missing fields zero), and the parts the name server does not use (filter
// servers, static-topic mappings) are not decoded beyond checking the JSON.
type (
	registerBodyWire struct {
		TopicConfigSerializeWrapper struct {
			TopicConfigTable map[string]topicConfigWire `json:"topicConfigTable"`
			DataVersion      dataVersionWire            `json:"dataVersion"`
		} `json:"topicConfigSerializeWrapper"`
	}
	topicConfigWire struct {
		TopicName       lenient.String `json:"topicName"`
		ReadQueueNums   lenient.Int32  `json:"readQueueNums"`
		WriteQueueNums  lenient.Int32  `json:"writeQueueNums"`
		Perm            lenient.Int32  `json:"perm"`
		TopicFilterType lenient.String `json:"topicFilterType"`
		TopicSysFlag    lenient.Int32  `json:"topicSysFlag"`
		Order           lenient.Bool   `json:"order"`
	}
	dataVersionWire struct {
		StateVersion lenient.Int64 `json:"stateVersion"`
		Timestamp    lenient.Int64 `json:"timestamp"`
		Counter      lenient.Int64 `json:"counter"`
	}
)

// topicFilterTypes are TopicFilterType's names by ordinal.
var topicFilterTypes = []string{"SINGLE_TAG", "MULTI_TAG"}

// config converts a decoded topic config; a missing filter type is Java's
// default, SINGLE_TAG.
func (w topicConfigWire) config() meta.TopicConfig {
	tc := meta.TopicConfig{
		TopicName:       string(w.TopicName),
		ReadQueueNums:   int32(w.ReadQueueNums),
		WriteQueueNums:  int32(w.WriteQueueNums),
		Perm:            int32(w.Perm),
		TopicFilterType: lenient.Enum(w.TopicFilterType, topicFilterTypes),
		TopicSysFlag:    int32(w.TopicSysFlag),
		Order:           bool(w.Order),
	}
	if tc.TopicFilterType == "" {
		tc.TopicFilterType = "SINGLE_TAG"
	}
	return tc
}

// dataVersion converts a decoded DataVersion.
func (w dataVersionWire) dataVersion() DataVersion {
	return DataVersion{StateVersion: int64(w.StateVersion), Timestamp: int64(w.Timestamp), Counter: int64(w.Counter)}
}

// inflatedReader reads the length-prefixed sections of a compressed body.
type inflatedReader struct {
	lr    io.LimitedReader
	limit int64
}

// int32 reads one big-endian int32; atEOF reports a clean end before it.
func (r *inflatedReader) int32(what string) (n int32, atEOF bool, err error) {
	var b [4]byte
	k, err := io.ReadFull(&r.lr, b[:])
	if k == 0 && errors.Is(err, io.EOF) {
		return 0, true, r.eofError(what)
	}
	if err != nil {
		return 0, false, r.wrap(what, err)
	}
	return int32(binary.BigEndian.Uint32(b[:])), false, nil
}

// chunk reads a length-prefixed byte section.
func (r *inflatedReader) chunk(what string) ([]byte, error) {
	n, _, err := r.int32(what + " length")
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, fmt.Errorf("%w: compressed body: %s length %d", ErrBadBody, what, n)
	}
	// ReadAll grows with the data actually present, so a huge bogus length
	// costs nothing.
	data, err := io.ReadAll(io.LimitReader(&r.lr, int64(n)))
	if err != nil {
		return nil, r.wrap(what, err)
	}
	if len(data) != int(n) {
		return nil, r.eofError(what)
	}
	return data, nil
}

func (r *inflatedReader) eofError(what string) error {
	if r.lr.N <= 0 {
		return fmt.Errorf("%w: compressed body inflates beyond %d bytes", ErrBadBody, r.limit)
	}
	return fmt.Errorf("%w: compressed body truncated in %s", ErrBadBody, what)
}

func (r *inflatedReader) wrap(what string, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return r.eofError(what)
	}
	return fmt.Errorf("%w: compressed body %s: %v", ErrBadBody, what, err)
}

// decodeCompressedBody decodes the zlib layout described in the package doc,
// inflating at most limit bytes.
func decodeCompressedBody(body []byte, limit int64) (map[string]meta.TopicConfig, DataVersion, error) {
	var dv DataVersion
	zr, err := zlib.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, dv, fmt.Errorf("%w: compressed body: %v", ErrBadBody, err)
	}
	defer zr.Close()
	r := &inflatedReader{lr: io.LimitedReader{R: zr, N: limit}, limit: limit}

	raw, err := r.chunk("dataVersion")
	if err != nil {
		return nil, dv, err
	}
	var dvw dataVersionWire
	if err := json.Unmarshal(raw, &dvw); err != nil {
		return nil, dv, fmt.Errorf("%w: compressed body dataVersion: %v", ErrBadBody, err)
	}
	dv = dvw.dataVersion()
	count, _, err := r.int32("topic count")
	if err != nil {
		return nil, dv, err
	}
	if count < 0 {
		return nil, dv, fmt.Errorf("%w: compressed body: topic count %d", ErrBadBody, count)
	}
	topics := make(map[string]meta.TopicConfig, min(int(count), 1024))
	for i := range int(count) {
		raw, err := r.chunk("topic config " + strconv.Itoa(i))
		if err != nil {
			return nil, dv, err
		}
		tc, err := parseTopicConfigText(string(raw))
		if err != nil {
			return nil, dv, err
		}
		topics[tc.TopicName] = tc
	}
	if _, err := r.chunk("filter server list"); err != nil {
		return nil, dv, err
	}
	// Static-topic mappings: absent before 5.0, read and ignored after.
	n, atEOF, err := r.int32("mapping count")
	if atEOF {
		return topics, dv, nil
	}
	if err != nil {
		return nil, dv, err
	}
	for i := range max(int(n), 0) {
		if _, err := r.chunk("topic queue mapping " + strconv.Itoa(i)); err != nil {
			return nil, dv, err
		}
	}
	return topics, dv, nil
}

// parseTopicConfigText parses Java's TopicConfig.encode() text
// ("name read write perm filterType[ attributesJSON]") or a JSON object.
func parseTopicConfigText(s string) (meta.TopicConfig, error) {
	var tc meta.TopicConfig
	if strings.HasPrefix(strings.TrimSpace(s), "{") {
		var w topicConfigWire
		if err := json.Unmarshal([]byte(s), &w); err != nil {
			return tc, fmt.Errorf("%w: compressed topic config %q: %v", ErrBadBody, s, err)
		}
		return w.config(), nil
	}
	f := strings.SplitN(s, " ", 6)
	if len(f) < 5 || f[0] == "" {
		return tc, fmt.Errorf("%w: compressed topic config %q: want 5 fields", ErrBadBody, s)
	}
	nums := [3]int32{}
	for i := range nums {
		v, err := strconv.ParseInt(f[i+1], 10, 32)
		if err != nil {
			return tc, fmt.Errorf("%w: compressed topic config %q: field %d: %v", ErrBadBody, s, i+2, err)
		}
		nums[i] = int32(v)
	}
	if f[4] != "SINGLE_TAG" && f[4] != "MULTI_TAG" {
		return tc, fmt.Errorf("%w: compressed topic config %q: filter type %q", ErrBadBody, s, f[4])
	}
	tc = meta.TopicConfig{
		TopicName:       f[0],
		ReadQueueNums:   nums[0],
		WriteQueueNums:  nums[1],
		Perm:            nums[2],
		TopicFilterType: f[4],
	}
	return tc, nil
}
