// Package suggest finds the name a user probably meant when they mistyped
// one (a configuration key, a command-line flag): "did you mean flush?".
package suggest

import "strings"

// Closest returns the candidate closest to a mistyped name ("flsuh" →
// "flush", "brokername" → "brokerName"), or "" when none is close: an
// edit distance, case ignored, of at most 2 (1 for names under 5
// characters).
func Closest(name string, candidates []string) string {
	best, bestD := "", 3
	limit := 2
	if len(name) < 5 {
		limit = 1
	}
	lower := strings.ToLower(name)
	for _, c := range candidates {
		if d := distance(lower, strings.ToLower(c)); d <= limit && d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// DidYouMean is Closest as a phrase to append to an error, "; did you
// mean " + prefix + name + "?" ("" when there is no suggestion); prefix is
// "--" for a flag.
func DidYouMean(name string, candidates []string, prefix string) string {
	if s := Closest(name, candidates); s != "" {
		return "; did you mean " + prefix + s + "?"
	}
	return ""
}

// distance is the optimal string alignment distance of a and b: the
// insertions, deletions, substitutions and swaps of two neighbours that
// turn one into the other.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
