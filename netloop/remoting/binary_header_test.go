package remoting

import (
	"errors"
	"testing"
)

func TestDecodeBinaryHeader(t *testing.T) {
	tests := []struct {
		name   string
		header string // hex
		want   Command
	}{
		{
			name:   "go client verified bytes",
			header: "000a 09 013d 00000002 00000000 00000001 72 00000008 0001 6b 00000001 76",
			want: Command{Code: 10, Language: "GO", Version: 317, Opaque: 2, Remark: "r",
				ExtFields: map[string]string{"k": "v"}},
		},
		{
			name:   "minimal java",
			header: "0000 00 01df 00000007 00000001 00000000 00000000",
			want:   Command{Code: 0, Language: "JAVA", Version: 479, Opaque: 7, Flag: 1, ExtFields: map[string]string{}},
		},
		{
			name:   "unknown language byte",
			header: "0001 c8 0001 00000000 00000000 00000000 00000000",
			want:   Command{Code: 1, Language: "OTHER", Version: 1, ExtFields: map[string]string{}},
		},
		{
			name:   "node js, negative code, empty key and value",
			header: "ffff 0d ffff ffffffff 00000002 00000000 00000006 0000 00000000",
			want: Command{Code: -1, Language: "NODE_JS", Version: -1, Opaque: -1, Flag: 2,
				ExtFields: map[string]string{"": ""}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeBinaryHeader(mustHex(tc.header))
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if d := sameCommand(got, &tc.want); d != "" {
				t.Fatal(d)
			}
		})
	}
}

func TestDecodeBinaryHeaderErrors(t *testing.T) {
	tests := []struct {
		name   string
		header string // hex
	}{
		{"empty", ""},
		{"fixed part short", "000a 09 013d 00000002 00000000 00000000 000000"},
		{"negative remark length", "000a 09 013d 00000002 00000000 ffffffff 00000000"},
		{"remark past end", "000a 09 013d 00000002 00000000 00000005 72 00000000"},
		{"remark eats ext length", "000a 09 013d 00000002 00000000 00000004 00000000"},
		{"huge remark length", "000a 09 013d 00000002 00000000 7fffffff 00000000"},
		{"ext length short", "000a 09 013d 00000002 00000000 00000000 00000009 0001 6b 00000001 76"},
		{"ext length long", "000a 09 013d 00000002 00000000 00000000 00000007 0001 6b 00000001 76"},
		{"negative ext length", "000a 09 013d 00000002 00000000 00000000 ffffffff"},
		{"trailing byte after ext", "000a 09 013d 00000002 00000000 00000000 00000000 00"},
		{"key length cut", "000a 09 013d 00000002 00000000 00000000 00000001 00"},
		{"negative key length", "000a 09 013d 00000002 00000000 00000000 00000006 ffff 00000000"},
		{"key past end", "000a 09 013d 00000002 00000000 00000000 00000006 0005 6b6b6b6b"},
		{"value length cut", "000a 09 013d 00000002 00000000 00000000 00000005 0001 6b 0000"},
		{"negative value length", "000a 09 013d 00000002 00000000 00000000 00000007 0001 6b ffffffff"},
		{"value past end", "000a 09 013d 00000002 00000000 00000000 00000008 0001 6b 00000002 76"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := decodeBinaryHeader(mustHex(tc.header))
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("got %+v, %v; want ErrMalformed", c, err)
			}
		})
	}
}

func TestLanguageTable(t *testing.T) {
	for code, name := range languageNames {
		if got := languageCode(name); got != byte(code) {
			t.Errorf("languageCode(%q) = %d, want %d", name, got, code)
		}
		if got := languageName(byte(code)); got != name {
			t.Errorf("languageName(%d) = %q, want %q", code, got, name)
		}
	}
	if languageCode("GO") != 9 || languageCode("JAVA") != 0 || languageCode("NODE_JS") != 13 {
		t.Error("wire values changed")
	}
	for _, name := range []string{"", "unknown", "go", "KOTLIN"} {
		if got := languageCode(name); got != languageOther {
			t.Errorf("languageCode(%q) = %d, want OTHER", name, got)
		}
	}
	if languageName(14) != "OTHER" || languageName(255) != "OTHER" {
		t.Error("unknown bytes must map to OTHER")
	}
}
