package message

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// Lengths of an offset message id in hex characters.
const (
	// OffsetMsgIDLenV4 is the length of an id whose store host is IPv4.
	OffsetMsgIDLenV4 = 2 * (4 + 4 + 8)
	// OffsetMsgIDLenV6 is the length of an id whose store host is IPv6.
	OffsetMsgIDLenV6 = 2 * (16 + 4 + 8)
)

// OffsetMsgID returns RocketMQ's offset message id (the broker's "msgId" in
// send responses): upper-case hex of the store host address (4 or 16 bytes),
// its port as int32 and the CommitLog offset as int64, 32 or 56 characters.
func OffsetMsgID(storeHost netip.AddrPort, physOffset int64) string {
	return string(AppendOffsetMsgID(make([]byte, 0, OffsetMsgIDLenV6), storeHost, physOffset))
}

// AppendOffsetMsgID appends the offset message id (see OffsetMsgID) to dst.
func AppendOffsetMsgID(dst []byte, storeHost netip.AddrPort, physOffset int64) []byte {
	var raw [HostV6Size + 8]byte
	b := appendHost(raw[:0], storeHost)
	b = binary.BigEndian.AppendUint64(b, uint64(physOffset))
	const digits = "0123456789ABCDEF"
	for _, c := range b {
		dst = append(dst, digits[c>>4], digits[c&0xf])
	}
	return dst
}

// ParseOffsetMsgID parses an offset message id (either hex case) into the
// store host and the CommitLog offset. It wraps ErrBadMsgID on failure.
func ParseOffsetMsgID(id string) (netip.AddrPort, int64, error) {
	if len(id) != OffsetMsgIDLenV4 && len(id) != OffsetMsgIDLenV6 {
		return netip.AddrPort{}, 0, fmt.Errorf("message id %q: length %d, want %d or %d: %w",
			id, len(id), OffsetMsgIDLenV4, OffsetMsgIDLenV6, ErrBadMsgID)
	}
	raw, err := hex.DecodeString(id)
	if err != nil {
		return netip.AddrPort{}, 0, fmt.Errorf("message id %q: %w: %w", id, ErrBadMsgID, err)
	}
	hostLen := len(raw) - 8
	host, err := readHost(raw[:hostLen])
	if err != nil {
		return netip.AddrPort{}, 0, fmt.Errorf("message id %q: port out of range: %w", id, ErrBadMsgID)
	}
	off := int64(binary.BigEndian.Uint64(raw[hostLen:]))
	if off < 0 {
		return netip.AddrPort{}, 0, fmt.Errorf("message id %q: negative offset %d: %w", id, off, ErrBadMsgID)
	}
	return host, off, nil
}

// UniqKeyGenerator makes UNIQ_KEY values in the Java client's format (what a
// Java broker assigns to messages that arrive without one): upper-case hex of
// a fixed prefix [IP (4 bytes, or 16 for IPv6), pid as int16, salt as int32]
// followed by [ms since the start of the current month as int32, counter as
// int16]: 32 characters for IPv4, 56 for IPv6. Months begin in the location
// of the time passed to NextAt (Local for Next). It is safe for concurrent use.
type UniqKeyGenerator struct {
	prefix string

	mu struct {
		sync.Mutex
		startMs, nextMs int64 // current month [start, next) in ms
		counter         uint16
	}
}

// NewUniqKeyGenerator returns a generator for the given host address, process
// id and salt (Java uses its class loader's hash code; any value that differs
// between processes on one host will do). An invalid ip is written as 0.0.0.0.
func NewUniqKeyGenerator(ip netip.Addr, pid int, salt int32) *UniqKeyGenerator {
	var buf []byte
	switch {
	case !ip.IsValid():
		buf = append(buf, 0, 0, 0, 0)
	case ip.Is4() || ip.Is4In6():
		b := ip.Unmap().As4()
		buf = append(buf, b[:]...)
	default:
		b := ip.As16()
		buf = append(buf, b[:]...)
	}
	buf = binary.BigEndian.AppendUint16(buf, uint16(pid))
	buf = binary.BigEndian.AppendUint32(buf, uint32(salt))
	g := &UniqKeyGenerator{prefix: strings.ToUpper(hex.EncodeToString(buf))}
	g.mu.startMs, g.mu.nextMs = math.MaxInt64, math.MinInt64 // force a month computation
	return g
}

// Next returns a new UNIQ_KEY for the current time.
func (g *UniqKeyGenerator) Next() string { return g.NextAt(time.Now()) }

// NextAt returns a new UNIQ_KEY as if the clock read now.
func (g *UniqKeyGenerator) NextAt(now time.Time) string {
	var buf [2 * (HostV6Size + 2 + 4 + 4 + 2)]byte
	return string(g.AppendNextAt(buf[:0], now))
}

// AppendNextAt appends a new UNIQ_KEY, as if the clock read now, to dst.
func (g *UniqKeyGenerator) AppendNextAt(dst []byte, now time.Time) []byte {
	ms := now.UnixMilli()
	g.mu.Lock()
	if ms < g.mu.startMs || ms >= g.mu.nextMs {
		y, m, _ := now.Date()
		start := time.Date(y, m, 1, 0, 0, 0, 0, now.Location())
		g.mu.startMs, g.mu.nextMs = start.UnixMilli(), start.AddDate(0, 1, 0).UnixMilli()
	}
	diff := int32(ms - g.mu.startMs)
	counter := g.mu.counter
	g.mu.counter++
	g.mu.Unlock()

	var tail [6]byte
	binary.BigEndian.PutUint32(tail[:4], uint32(diff))
	binary.BigEndian.PutUint16(tail[4:], counter)
	dst = append(dst, g.prefix...)
	for _, b := range tail {
		dst = append(dst, upperHex[b>>4], upperHex[b&0xf])
	}
	return dst
}

// upperHex are the digits of upper-case hex.
const upperHex = "0123456789ABCDEF"
