package admin

import "github.com/wheelmq/wheelmq/actors/role"

// Role is a broker's role as every view names it (the console's Overview
// and Cluster pages, wheelctl cluster list and its JSON), from what its
// GET_BROKER_RUNTIME_INFO says: haRole (master, replica) when it
// replicates, with " (fenced)" when haFenced; else "standalone" for the
// group's only broker (id 0) and "replica" for any other id. A broker
// whose runtime info is unknown (nil) is named by its id alone: "master"
// for 0, "replica" otherwise. The rule is role.Name's (and
// role.Registered's), which the broker API names its roles by.
func Role(info map[string]string, brokerID int64) string {
	if info == nil {
		return role.Registered(brokerID)
	}
	return role.Name(info["haRole"], info["haFenced"] == "true", brokerID)
}
