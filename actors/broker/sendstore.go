package broker

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// The stored side of a send: its records in the CommitLog layout, and the
// statuses of a failed append.

// sendFailure maps a failed append to its status. A store out of space
// is Unavailable with a remark saying so, as RocketMQ does; the clients
// retry it (on another broker when there is one), and nothing was stored.
//
// Replication (actors/writer, confirm.go), as RocketMQ's controller mode:
//   - not master (a replica, a promotion under way) or a fenced master:
//     NotMaster, nothing stored (the clients retry it on another broker);
//   - sync-state set below --min-in-sync-replicas: ReplicasNotEnough
//     "in-sync replicas not enough", nothing stored;
//   - stored but not confirmed by the replicas (in time): ReplicaTimeout
//     (stored on the master, maybe lost on failover).
func sendFailure(err error) *Error {
	switch {
	case errors.Is(err, writer.ErrNotMaster), errors.Is(err, writer.ErrFenced):
		return &Error{Status: NotMaster, Err: err,
			Remark: "[NOT_MASTER] service not available now: " + err.Error() + ", the message was not stored"}
	case errors.Is(err, writer.ErrInSyncReplicas):
		return &Error{Status: ReplicasNotEnough, Remark: "in-sync replicas not enough", Err: err}
	case errors.Is(err, writer.ErrNotConfirmed):
		return &Error{Status: ReplicaTimeout, Remark: "[FLUSH_SLAVE_TIMEOUT] " + err.Error(), Err: err}
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return &Error{Status: Unavailable, Err: err,
			Remark: "[DISK_FULL] service not available now: the broker's disk is full, the message was not stored (" + err.Error() + ")"}
	}
	return &Error{Status: Internal, Remark: err.Error(), Err: err}
}

// SendFailure is the status of a failed CommitLog append (for a codec's
// own fast path, which appends without Send).
func SendFailure(err error) *Error { return sendFailure(err) }

// buildRecords encodes the request's message(s) in the stored layout.
func (b *Broker) buildRecords(c Caller, req *SendRequest, plan *sendPlan, props map[string]string) (
	[][]byte, []string, *Error) {
	now := time.Now().UnixMilli()
	mk := func(body []byte, flag int32, props map[string]string) ([]byte, string, error) {
		uniq := props[message.PropUniqKey]
		if uniq == "" {
			uniq = b.uniq.Next()
			props[message.PropUniqKey] = uniq
		}
		props[message.PropCluster] = b.cfg.Cluster
		switch {
		case plan.topic == meta.TopicTransHalf:
			props[message.PropTransactionID] = uniq
		case plan.topic != req.Topic && plan.topic != timer.Topic:
			props[message.PropDLQOriginTopic] = req.Topic
		}
		rec := &message.Record{
			QueueID: plan.queueID, Flag: flag, SysFlag: plan.sysFlag, BornTimestamp: req.BornTimestamp, BornHost: c.Remote,
			StoreTimestamp: now, StoreHost: b.advertise, ReconsumeTimes: req.ReconsumeTimes,
			Body: body, Topic: plan.topic, Properties: message.EncodeProperties(props),
		}
		out, err := rec.Encode(make([]byte, 0, rec.EncodedSize()))
		return out, uniq, err
	}
	if !req.Batch {
		rec, uniq, err := mk(req.Body, req.Flag, props)
		if err != nil {
			return nil, nil, Errorf(IllegalMessage, "message cannot be stored: %v", err)
		}
		return [][]byte{rec}, []string{uniq}, nil
	}
	entries, err := message.DecodeBatch(req.Body)
	if err != nil {
		return nil, nil, Errorf(IllegalMessage, "malformed batch body: %v", err)
	}
	if len(entries) == 0 {
		return nil, nil, Errorf(IllegalMessage, "batch body holds no message")
	}
	records := make([][]byte, 0, len(entries))
	uniqs := make([]string, 0, len(entries))
	limit := b.p.Settings().MaxMessageSize
	for i, e := range entries {
		if len(e.Body) == 0 || len(e.Body) > limit {
			return nil, nil, Errorf(IllegalMessage, "batch message %d: body size %d must be in 1..%d", i, len(e.Body), limit)
		}
		eprops := message.DecodeProperties(e.Properties)
		if timer.HasTimerProps(eprops) {
			return nil, nil, Errorf(IllegalMessage, "batch message %d: delay and timer properties are not supported in batches", i)
		}
		rec, uniq, err := mk(e.Body, e.Flag, eprops)
		if err != nil {
			return nil, nil, Errorf(IllegalMessage, "batch message %d cannot be stored: %s", i, fmt.Sprint(err))
		}
		records = append(records, rec)
		uniqs = append(uniqs, uniq)
	}
	return records, uniqs, nil
}
