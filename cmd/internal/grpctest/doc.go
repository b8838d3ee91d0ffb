// Package grpctest holds the end-to-end tests of wheelmq's RocketMQ 5 gRPC
// endpoint (netloop/grpcgw): the official Go v5 SDK
// (github.com/apache/rocketmq-clients/golang/v5) and raw
// apache.rocketmq.v2 calls against a real in-process broker started by
// processtest, over real TCP, with the gRPC port on a free address.
package grpctest
