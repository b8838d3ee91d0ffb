package message

// SYSFLAG bits of a stored record (RocketMQ MessageSysFlag).
const (
	// SysFlagCompressed marks a compressed body (zlib unless bits 8-10 say otherwise).
	SysFlagCompressed int32 = 0x1
	// SysFlagMultiTags marks a message with several tags.
	SysFlagMultiTags int32 = 0x2
	// SysFlagTransactionNotType is the transaction type of a normal message.
	SysFlagTransactionNotType int32 = 0x0
	// SysFlagTransactionPrepared marks a half (prepared) transactional message.
	SysFlagTransactionPrepared int32 = 0x4
	// SysFlagTransactionCommit marks a committed transactional message.
	SysFlagTransactionCommit int32 = 0x8
	// SysFlagTransactionRollback marks a rolled-back transactional message.
	SysFlagTransactionRollback int32 = 0xC
	// SysFlagBornHostV6 says BORNHOST is an IPv6 host (20 bytes).
	SysFlagBornHostV6 int32 = 0x10
	// SysFlagStoreHostV6 says STOREHOST is an IPv6 host (20 bytes).
	SysFlagStoreHostV6 int32 = 0x20
	// SysFlagNeedUnwrap marks a batch that must be unwrapped.
	SysFlagNeedUnwrap int32 = 0x40
	// SysFlagInnerBatch marks an inner batch (batch consume queue).
	SysFlagInnerBatch int32 = 0x80
	// SysFlagCompressionTypeMask selects the compression type bits 8-10.
	SysFlagCompressionTypeMask int32 = 0x700
	// SysFlagCompressionLZ4 is compression type LZ4.
	SysFlagCompressionLZ4 int32 = 0x100
	// SysFlagCompressionZSTD is compression type ZSTD.
	SysFlagCompressionZSTD int32 = 0x200
	// SysFlagCompressionZLIB is compression type ZLIB.
	SysFlagCompressionZLIB int32 = 0x300
)

// TransactionType returns the transaction type bits (SysFlagTransaction*) of sysFlag.
func TransactionType(sysFlag int32) int32 { return sysFlag & SysFlagTransactionRollback }
