package broker

// The message type rule for a batch (msgtype.go): each message of a batch
// sent to a topic whose type is checked must be of that type, as a single
// message must (a batch to a FIFO topic carries a message group in every
// message).

import (
	"fmt"

	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// checkBatchTypes refuses a batch body holding a message cfg does not
// take; it reads the batch only when cfg's sends are checked (a malformed
// batch is refused later, where it is decoded to be stored).
func (b *Broker) checkBatchTypes(cfg meta.TopicConfig, body []byte) *Error {
	if LiteTopic(cfg) {
		return Errorf(IllegalMessage, "a batch cannot be sent to the LITE topic %s: send lite messages one by one", cfg.TopicName)
	}
	if !b.TypeChecked(cfg) {
		return nil
	}
	entries, err := message.DecodeBatch(body)
	if err != nil {
		return nil
	}
	for i, e := range entries {
		if err := b.CheckMessageType(cfg, message.DecodeProperties(e.Properties)); err != nil {
			return &Error{Status: err.Status, Remark: fmt.Sprintf("batch message %d: %s", i, err.Remark)}
		}
	}
	return nil
}
