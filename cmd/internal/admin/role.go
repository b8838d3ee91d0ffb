package admin

// Role is a broker's role as every view names it (the console's Overview
// and Cluster pages, wheelctl cluster list and its JSON), from what its
// GET_BROKER_RUNTIME_INFO says: haRole (master, replica) when it
// replicates, with " (fenced)" when haFenced; else "standalone" for the
// group's only broker (id 0) and "replica" for any other id. A broker
// whose runtime info is unknown (nil) is named by its id alone: "master"
// for 0, "replica" otherwise.
func Role(info map[string]string, brokerID int64) string {
	if info == nil {
		if brokerID == 0 {
			return "master"
		}
		return "replica"
	}
	r := info["haRole"]
	switch {
	case r == "" && brokerID == 0:
		return "standalone"
	case r == "":
		return "replica"
	case info["haFenced"] == "true":
		return r + " (fenced)"
	}
	return r
}
