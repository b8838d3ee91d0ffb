package meta

import "errors"

// Errors returned by this package, wrapped with the path or name involved;
// test with errors.Is.
var (
	// ErrCorrupt means a metadata file cannot be parsed or fails its checks
	// (and no usable backup exists).
	ErrCorrupt = errors.New("meta: corrupt file")
	// ErrVersion means a checkpoint file has a version this build cannot read.
	ErrVersion = errors.New("meta: unsupported format version")
	// ErrInvalidTopic means a topic name breaks RocketMQ's naming rules.
	ErrInvalidTopic = errors.New("meta: invalid topic name")
	// ErrInvalidGroup means a group name breaks RocketMQ's naming rules.
	ErrInvalidGroup = errors.New("meta: invalid group name")
	// ErrInvalidName means a checkpoint entry name is empty, too long or
	// uses characters outside [A-Za-z0-9._-].
	ErrInvalidName = errors.New("meta: invalid checkpoint name")
)
