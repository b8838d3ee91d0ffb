package role

// Name is how every front end names a broker's role (the console's
// Overview and Cluster pages, wheelctl cluster list): haRole is the
// replication role the broker reports ("": no replication), fenced whether
// a master has fenced itself, brokerID its id in its group's
// registration. A broker without replication is "standalone" as id 0 and
// a "replica" otherwise.
func Name(haRole string, fenced bool, brokerID int64) string {
	switch {
	case haRole == "" && brokerID == 0:
		return "standalone"
	case haRole == "":
		return "replica"
	case fenced:
		return haRole + " (fenced)"
	}
	return haRole
}

// Registered names the role of a broker known only from its name-server
// registration (its runtime state unknown): id 0 is its group's master.
func Registered(brokerID int64) string {
	if brokerID == 0 {
		return "master"
	}
	return "replica"
}
