package auth

import "github.com/wheelmq/wheelmq/netloop/remoting"

// Hint is what an operator reading a refusal in the log is told to do:
// the account problem in plain words and the setting that fixes it. A
// refused route lookup (GET_ROUTEINFO_BY_TOPIC) gets a note first: RocketMQ's
// clients drop its NO_PERMISSION and report "route info not found" ("No
// route info of this topic" in Java), which sends users to the name
// server's routes instead of their credentials.
func Hint(code int32, reason Reason) string {
	h := reasonHint(reason)
	if code == remoting.GetRouteInfoByTopic {
		return `the client reports this as "route info not found" (Java: "No route info of this topic"): ` + h
	}
	return h
}

func reasonHint(reason Reason) string {
	switch reason {
	case ReasonAnonymous:
		return "the client sends no credentials: give it the AccessKey and SecretKey of an account of the ACL file " +
			"(Go client: producer/consumer.WithCredentials; Java: AclClientRPCHook; wheelctl: --access-key and --secret-key)"
	case ReasonUnknownKey, ReasonBadSignature:
		return "the client's AccessKey is not in the ACL file or its SecretKey is not the account's: compare both with the ACL file"
	case ReasonAddress:
		return "the account's whiteRemoteAddress does not cover the client's address: widen it or use another account"
	case ReasonPermission:
		return "the account lacks the permission the remark names: add it to topicPerms/groupPerms (or defaultTopicPerm/defaultGroupPerm)"
	case ReasonAdminOnly:
		return "the request is an administrative one: use an account with admin: true"
	case ReasonStaleDate:
		return "the client's clock is too far from the broker's (or its time zone is not in --grpc-signature-offsets)"
	case ReasonMalformed:
		return "the client's authorization header does not parse: check the SDK's credentials provider"
	}
	return ""
}
