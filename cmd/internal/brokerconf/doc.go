// Package brokerconf reads wheelmq's configuration files: RocketMQ's
// broker.conf (Java properties, read by netloop/remoting/javaprops) with
// its keys mapped to wheelmq's flags (see Mapping), or a native YAML file
// whose keys are the flag names. Load returns flag assignments with the file and line they
// came from, and every problem of the file at once, each on its own line:
// an unknown key (one neither in Mapping nor in Ignore, or not a flag) is
// one, with the closest known key; cmd/wheelmq applies them under the environment and the
// command line (file < WHEELMQ_* < flags).
package brokerconf
