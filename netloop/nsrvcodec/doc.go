// Package nsrvcodec is the remoting codec of the name server
// (actors/namesrv): it decodes a request's header fields into the typed
// namesrv.Call, hands it to the registry stage, and encodes the typed
// namesrv.Answer back into RocketMQ's response (the response code of its
// namesrv.Status, header fields, compact JSON bodies, GET_NAMESRV_CONFIG's
// properties text). It also holds what the name-server port checks before
// that (Permissions, by request code) and the requests a broker sends to
// name servers (NewRegisterRequest, NewUnregisterRequest).
//
// The name server's formats (route JSON, the compressed REGISTER_BROKER
// body, kvConfig.json) are documented in the namesrv package and
// docs/namesrv.md; this package only places them in remoting frames. A
// request whose header does not decode is refused here, before the stage
// (SYSTEM_ERROR, or INVALID_PARAMETER for a value out of range, with the
// field named in the remark; REQUEST_CODE_NOT_SUPPORTED for a code the name
// server does not serve), and changes nothing.
package nsrvcodec
