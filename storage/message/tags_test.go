package message

import "testing"

// Expected values are Java's String.hashCode ("hello" is the classic
// 99162322) and the Go client's byte-wise variant.
func TestTagsHashCode(t *testing.T) {
	tests := []struct {
		tags       string
		java, goCl int64
	}{
		{"", 0, 0},
		{"hello", 99162322, 99162322},
		{"TagA", 2598919, 2598919},
		{"a||b", 3012833, 3012833},
		{"TagA TagB", -1136796543, -1136796543},
		{"Hello RocketMQ tag with a long text to overflow", 297645887, 297645887},
		{"über", 7604755, 185784726},
		{"标签", 857175, -1853217173},
		{"😀", 1772899, 7307479}, // surrogate pair D83D DE00
	}
	for _, tt := range tests {
		t.Run(tt.tags, func(t *testing.T) {
			if got := TagsHashCode(tt.tags); got != tt.java {
				t.Errorf("TagsHashCode = %d, want %d", got, tt.java)
			}
			if got := TagsHashCodeBytes([]byte(tt.tags)); got != tt.java {
				t.Errorf("TagsHashCodeBytes = %d, want %d", got, tt.java)
			}
			if got := TagsHashCodeGoClient(tt.tags); got != tt.goCl {
				t.Errorf("TagsHashCodeGoClient = %d, want %d", got, tt.goCl)
			}
		})
	}
	if allocs := testing.AllocsPerRun(10, func() { TagsHashCodeBytes([]byte("TagA TagB")) }); allocs != 0 {
		t.Errorf("TagsHashCodeBytes: %v allocations", allocs)
	}
}
