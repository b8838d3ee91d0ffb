package remoting

// languageNames maps RocketMQ LanguageCode byte values (the ROCKETMQ binary
// header's language byte) to the names used in JSON headers. The index is
// the code. These values are part of the wire format.
var languageNames = [...]string{
	"JAVA",    // 0
	"CPP",     // 1
	"DOTNET",  // 2
	"PYTHON",  // 3
	"DELPHI",  // 4
	"ERLANG",  // 5
	"RUBY",    // 6
	"OTHER",   // 7
	"HTTP",    // 8
	"GO",      // 9
	"PHP",     // 10
	"OMS",     // 11
	"RUST",    // 12
	"NODE_JS", // 13
}

// languageOther is the code of "OTHER", used for names and bytes outside the
// table.
const languageOther byte = 7

// languageName returns the name of a language byte; unknown bytes map to
// "OTHER" rather than failing, as new clients may add languages.
func languageName(code byte) string {
	if int(code) < len(languageNames) {
		return languageNames[code]
	}
	return languageNames[languageOther]
}

// languageCode returns the byte for a language name; unknown names
// (including "") map to OTHER.
func languageCode(name string) byte {
	switch name {
	case "GO":
		return 9 // the common case first
	case "JAVA":
		return 0
	}
	for i, n := range languageNames {
		if n == name {
			return byte(i)
		}
	}
	return languageOther
}
