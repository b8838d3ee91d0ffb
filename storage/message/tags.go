package message

import "unicode/utf16"

// TagsHashCode returns the tag hash stored in consume-queue units: Java's
// String.hashCode of tags (h = 31*h + c over UTF-16 code units, int32
// arithmetic) widened to int64. It is 0 for "". Invalid UTF-8 bytes count as
// U+FFFD each, as Go's string iteration decodes them.
func TagsHashCode(tags string) int64 {
	var h int32
	for _, r := range tags {
		h = hashRune(h, r)
	}
	return int64(h)
}

// hashRune is one step of Java's String.hashCode for r: one UTF-16 code
// unit, or the two of a surrogate pair.
func hashRune(h int32, r rune) int32 {
	if r >= 0x10000 {
		hi, lo := utf16.EncodeRune(r)
		return 31*(31*h+hi) + lo
	}
	return 31*h + r
}

// TagsHashCodeBytes is TagsHashCode of tags given as bytes (no string made).
func TagsHashCodeBytes(tags []byte) int64 {
	var h int32
	for _, r := range string(tags) { // no conversion: the compiler ranges over the bytes
		h = hashRune(h, r)
	}
	return int64(h)
}

// TagsHashCodeGoClient returns the hash the Go client puts in a
// subscription's codeSet: the same recurrence over UTF-8 bytes instead of
// UTF-16 code units. It equals TagsHashCode for ASCII tags only, so a broker
// that filters by codeSet must not compare non-ASCII tags' Go-client codes
// with TagsHashCode; hashing the subscription's tagsSet strings with
// TagsHashCode avoids the mismatch.
func TagsHashCodeGoClient(tags string) int64 {
	var h int32
	for i := 0; i < len(tags); i++ {
		h = 31*h + int32(tags[i])
	}
	return int64(h)
}
