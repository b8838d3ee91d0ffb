package message

import (
	"net/netip"
)

// sampleRecord returns a fully populated IPv4 record used across tests.
func sampleRecord() Record {
	return Record{
		QueueID:                   3,
		Flag:                      7,
		QueueOffset:               42,
		PhysicalOffset:            1 << 20,
		SysFlag:                   0,
		BornTimestamp:             1700000000123,
		BornHost:                  netip.MustParseAddrPort("192.168.0.10:54321"),
		StoreTimestamp:            1700000000456,
		StoreHost:                 netip.MustParseAddrPort("10.0.0.1:10911"),
		ReconsumeTimes:            2,
		PreparedTransactionOffset: 0,
		Body:                      []byte("Hello RocketMQ"),
		Topic:                     "TopicTest",
		Properties: EncodeProperties(map[string]string{
			PropTags:    "TagA",
			PropKeys:    "order-1 order-2",
			PropUniqKey: "C0A8000A30396D4F1E6F1A2B3C4D0001",
			PropWait:    "true",
		}),
	}
}

// sampleRecordV6 returns sampleRecord with IPv6 born and store hosts.
func sampleRecordV6() Record {
	r := sampleRecord()
	r.BornHost = netip.MustParseAddrPort("[2001:db8::10]:54321")
	r.StoreHost = netip.MustParseAddrPort("[fd00::1]:10911")
	return r
}
