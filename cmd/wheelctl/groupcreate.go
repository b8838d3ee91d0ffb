package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wheelmq/wheelmq/storage/meta"
)

// groupCreateFlags are wheelctl group create's options.
type groupCreateFlags struct {
	retryMax, retryQueues int
	orderly, noBroadcast  bool
	retry                 string
	jitter                float64
}

func newGroupCreateCmd(g *globals) *cobra.Command {
	var f groupCreateFlags
	c := &cobra.Command{
		Use:   "create GROUP",
		Short: "Create or update a consumer group, with its retry policy (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)",
		Long: `Create or update a consumer group on the brokers (every master, or --broker), with RocketMQ 5's
group retry policy: how long a message a consumer failed waits before it comes back.

  --retry exponential:INITIAL,MAX,MULTIPLIER   e.g. exponential:1s,10m,2 (1 s, 2 s, 4 s ... 10 m)
  --retry customized:D1,D2,...                 e.g. customized:1s,5s,30s (the delays in turn; the
                                               last one repeats; as in RocketMQ, a push consumer's
                                               send-back starts at the third entry, POP
                                               redeliveries and v5 nacks at the first)

--retry-jitter spreads each delay by up to that fraction either way (0.2: 0.8x to 1.2x). Without
--retry the group keeps RocketMQ's delay levels (10 s, 30 s, 1 m ... 2 h). After --retry-max
retries a message goes to %DLQ%GROUP.`,
		Example: "  wheelctl group create billing --retry exponential:1s,10m,2 --retry-max 8\n" +
			"  wheelctl group create billing --retry customized:500ms,1s,5s,30s --retry-jitter 0.1",
		Args: exactArgs("GROUP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			body, err := groupConfigBody(args[0], f)
			if err != nil {
				return err
			}
			s := g.session()
			defer s.Close()
			brokers, err := targetBrokers(cmd.Context(), s, g, "")
			if err != nil {
				return err
			}
			for _, b := range brokers {
				if err := s.PutGroup(cmd.Context(), b.Addr, body); err != nil {
					return fmt.Errorf("create group %s on %s: %w", args[0], b.Addr, err)
				}
				fmt.Fprintf(g.stdout, "group %s created on %s (%s)\n", args[0], b.Name, b.Addr)
			}
			return nil
		},
	}
	c.Flags().IntVar(&f.retryMax, "retry-max", int(meta.DefaultRetryMaxTimes), "retries before the dead-letter queue")
	c.Flags().IntVar(&f.retryQueues, "retry-queues", int(meta.DefaultRetryQueueNums), "queues of %RETRY%GROUP (0: failed messages are dropped)")
	c.Flags().BoolVar(&f.orderly, "orderly", false, "an orderly (FIFO) group")
	c.Flags().BoolVar(&f.noBroadcast, "no-broadcast", false, "refuse broadcasting consumers")
	c.Flags().StringVar(&f.retry, "retry", "", "retry policy: exponential:INITIAL,MAX,MULTIPLIER or customized:D1,D2,... (default: RocketMQ's delay levels)")
	c.Flags().Float64Var(&f.jitter, "retry-jitter", 0, "spread each retry delay by up to this fraction either way, from 0 to below 1")
	return c
}

// groupConfigBody is the UPDATE_AND_CREATE_SUBSCRIPTIONGROUP body of f,
// its policy checked as the broker checks it.
func groupConfigBody(name string, f groupCreateFlags) ([]byte, error) {
	cfg := meta.NewSubscriptionGroupConfig(name)
	cfg.RetryMaxTimes, cfg.RetryQueueNums = int32(f.retryMax), int32(f.retryQueues)
	cfg.ConsumeMessageOrderly, cfg.ConsumeBroadcastEnable = f.orderly, !f.noBroadcast
	policy, err := retryPolicyJSON(f.retry, f.jitter)
	if err != nil {
		return nil, err
	}
	if policy != nil {
		if _, err := meta.ParseRetryPolicy(policy); err != nil {
			return nil, fmt.Errorf("--retry: %w", err)
		}
		cfg.GroupRetryPolicy = policy
	}
	return json.Marshal(cfg)
}

// retryPolicyJSON turns --retry and --retry-jitter into RocketMQ's
// groupRetryPolicy object (nil: neither given).
func retryPolicyJSON(spec string, jitter float64) (json.RawMessage, error) {
	if spec == "" && jitter == 0 {
		return nil, nil
	}
	obj := map[string]any{"type": meta.RetryCustomized}
	if spec != "" {
		kind, list, ok := strings.Cut(spec, ":")
		if !ok || list == "" {
			return nil, fmt.Errorf("--retry %q: want exponential:INITIAL,MAX,MULTIPLIER or customized:D1,D2 (any number of delays)", spec)
		}
		parts := strings.Split(list, ",")
		switch strings.ToLower(kind) {
		case "exponential":
			if len(parts) != 3 {
				return nil, fmt.Errorf("--retry %q: exponential takes INITIAL,MAX,MULTIPLIER (e.g. exponential:1s,10m,2)", spec)
			}
			initial, err1 := time.ParseDuration(parts[0])
			maxD, err2 := time.ParseDuration(parts[1])
			mult, err3 := strconv.ParseInt(parts[2], 10, 64)
			if err1 != nil || err2 != nil || err3 != nil {
				return nil, fmt.Errorf("--retry %q: INITIAL and MAX are durations (1s, 10m), MULTIPLIER a whole number", spec)
			}
			obj["type"] = meta.RetryExponential
			obj["exponentialRetryPolicy"] = map[string]int64{"initial": initial.Milliseconds(), "max": maxD.Milliseconds(), "multiplier": mult}
		case "customized":
			next := make([]int64, len(parts))
			for i, p := range parts {
				d, err := time.ParseDuration(p)
				if err != nil {
					return nil, fmt.Errorf("--retry %q: %q is not a duration (1s, 500ms, 10m)", spec, p)
				}
				next[i] = d.Milliseconds()
			}
			obj["customizedRetryPolicy"] = map[string][]int64{"next": next}
		default:
			return nil, fmt.Errorf("--retry %q: the kind is exponential or customized", spec)
		}
	}
	if jitter != 0 {
		obj["jitter"] = jitter
	}
	return json.Marshal(obj)
}
