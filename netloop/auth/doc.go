// Package auth is who may do what on a remoting port: RocketMQ's request
// signature (the recipe every RocketMQ client signs with), the
// permissions a request needs, and the decision, for the broker's and the
// name server's ports alike. It does no I/O: the accounts come from a
// Directory (a plain_acl.yml parsed by ParsePlainACL, ACL 2.0 users and
// policies) that a stage loads and publishes (a Source), and the checks
// run where the request is read, as header parsing does.
//
// # The decision
//
// A Guard decides a request against the Needs of its code (each port has
// a Table; a code it lacks needs an admin account): the IP-bypass
// compatibility option aside, an empty AccessKey is anonymous and
// refused; an access key longer than MaxAccessKeyLen, or unknown, is
// refused; then the signature; then the account's address rule (a
// restriction on a valid signature, never a replacement); an admin
// account may do everything; else the request must not need an admin and
// the account must allow every resource it names (DENY wins). A refusal
// is a Refusal with a reason (the label of wheelmq_auth_refused_total)
// and a remark naming account, resource and rule, never a secret; the
// Guard counts it and logs it, at most once a second per reason.
// AllowView is the same decision for a frame read in place (the
// plain-send hot path), without allocating.
//
// # The signature
//
// A signed request carries extFields AccessKey and Signature (and maybe
// SecurityToken, OnsChannel). The signature is
//
//	content   = the values of every extField but Signature, in the byte
//	            order of their keys, concatenated, then the body as sent
//	Signature = base64(HMAC-SHA1(secretKey, content))
//
// (for requests of version <= 399, RocketMQ 4.9.3's, the field
// _UNIQUE_KEY_QUERY is left out). Keys are not signed and there is no
// separator, timestamp or nonce: only TLS protects a request from replay.
// Numbers and booleans a client sends in a JSON header are signed as their
// literal text, which is how the lenient header reader keeps them.
package auth
