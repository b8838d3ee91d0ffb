// Package javaprops reads and writes Java properties text, the format of
// RocketMQ's broker.conf and of the bodies of GET_BROKER_CONFIG (26) and
// UPDATE_BROKER_CONFIG (25).
//
// Parse reads what java.util.Properties.load reads (comments, the three
// separators, continuation lines, the escapes; UTF-8 rather than
// ISO-8859-1). Encode writes what RocketMQ's MixAll.properties2String
// writes, one "key=value" line per entry sorted by key, with escapes only
// where Properties.load would otherwise read something else (a backslash,
// a line break, a separator in a key, leading blanks of a value) and every
// character outside printable ASCII as \uXXXX, so that a Java peer, which
// loads the bytes as ISO-8859-1, reads the same text. Parse(Encode(m))
// returns m.
package javaprops
