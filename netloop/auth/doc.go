// Package auth is who may do what on a remoting port: RocketMQ's request
// signature (the recipe every RocketMQ client signs with), the
// permissions a request needs, and the decision, for the broker's and the
// name server's ports alike. It holds no state of its own and does no I/O:
// the accounts come from a Directory (a plain_acl.yml file, ACL 2.0 users
// and policies) that a stage loads and publishes, and the checks run
// where the request is read, as header parsing does.
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
