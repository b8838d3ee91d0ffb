// Package sql92 compiles and evaluates RocketMQ's SQL92 message filters
// (consumer.SQL92 / MessageSelector.bySql), the expressions a consumer
// subscribes with when it filters on message properties rather than tags.
//
// An expression is parsed once (Parse) into an immutable *Expr, which is
// then evaluated per message against the message's properties: Match reads
// the encoded PROPERTIES field of a stored record in place, without
// building a map and without allocating.
//
// # Grammar
//
// The subset of RocketMQ's SelectorParser.jj, with its precedence (loosest
// first): OR; AND; = <> IS [NOT] NULL; > >= < <= [NOT] BETWEEN [NOT] IN
// [NOT] CONTAINS/STARTSWITH/ENDSWITH; unary NOT, -, +. Parentheses group.
//
//	a > 5 AND (b = 'x' OR c IS NULL)
//	TAGS IN ('TagA', 'TagB') AND price BETWEEN 10 AND 20.5
//	region <> 'eu' AND NOT (name STARTSWITH 'tmp')
//
// Lexical rules:
//
//   - Keywords in any case: NOT AND OR BETWEEN IN TRUE FALSE NULL IS CONTAINS
//     STARTSWITH ENDSWITH.
//   - Properties: [A-Za-z_$][A-Za-z0-9_$]*, looked up case-sensitively
//     (TAGS is the tag, "tags" is a different, usually missing, property).
//   - Literals: 'text' (a doubled quote stands for one); integers (0 or 1-9 then digits,
//     optional l/L) are Integer in the int32 range, else Long; floats (5.5,
//     5., .5, 5E10) are Double; TRUE, FALSE, NULL. No hex, no "double quotes".
//   - Comments: -- to the end of the line, /* ... */.
//
// NOT binds tighter than comparisons, as in RocketMQ: write NOT (a = 1);
// "NOT a = 1" compares (NOT a) with 1 and never matches.
//
// Refused at parse time, as in RocketMQ: a string or boolean literal (or a
// condition) beside > >= < <=; = NULL and <> NULL (use IS NULL); TRUE = 5;
// IN with anything but a property on its left or with non-string elements;
// BETWEEN with NULL or reversed constant bounds; a bare literal as the whole
// condition; integers beyond int64.
//
// Differences from RocketMQ, deliberate: text after a complete expression is
// an error here (RocketMQ ignores it, so "a > 5 xyz" or "s LIKE 'a%'" filter
// on something else than they say); 0.0 is accepted (RocketMQ refuses it);
// -- comments may end the text without a newline; != and == get a hint.
// Nesting is limited to 100 levels.
//
// # Evaluation
//
// Semantics are those of RocketMQ's filter expressions with string
// conversion on (what the broker uses), for a message whose properties are
// all strings:
//
//   - A missing property is NULL. A comparison with NULL is NULL; NOT NULL is
//     NULL; AND is FALSE if a side is FALSE, else NULL if a side is NULL; OR
//     is TRUE if a side is TRUE, else NULL if one is NULL. Only TRUE delivers.
//   - x IS NULL is TRUE exactly when x is missing. x = y with both missing is
//     TRUE; with only y missing FALSE; with only x missing NULL.
//   - A property meeting a numeric literal is converted to the literal's
//     type (Integer.valueOf, Long.valueOf, Double.valueOf): "10" = 10, but
//     "1.5" > 1 fails to convert. A property that does not convert makes the
//     evaluation fail (ResultError): the message is skipped even under <> or
//     NOT, like RocketMQ skips a message when its evaluator throws.
//   - Two properties under > >= < <= are both read as doubles, or fail.
//   - String = is exact and case-sensitive; = TRUE/FALSE converts the
//     property with Boolean.valueOf (case-insensitive "true").
//   - A bare property used as a condition is NULL when missing, else FALSE.
//   - IN is NULL for a missing property; CONTAINS, STARTSWITH, ENDSWITH and
//     their NOT forms are FALSE for a missing property or an empty literal.
//
// Doubles compare like Java's Double.compare (NaN above everything, -0.0
// below 0.0). Integer parsing accepts ASCII digits only (Java also accepts
// other Unicode digits).
//
// # Errors
//
// Parse returns a *ParseError with the byte position and the column of the
// offending token and a message saying what was expected there, such as
// `sql92: column 5 of "a > AND b": expected a property, a literal or '(',
// found AND`.
package sql92
