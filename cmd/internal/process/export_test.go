package process

// LoopbackOnly exposes loopbackOnly to the package's external tests.
var LoopbackOnly = loopbackOnly

// ReconcileEpochs exposes reconcileEpochs to the package's external tests.
var ReconcileEpochs = reconcileEpochs

// HAVerifyMaster exposes haVerifyMaster to the package's external tests.
var HAVerifyMaster = haVerifyMaster

// ConsoleExposure exposes consoleExposure to the package's external tests.
var ConsoleExposure = consoleExposure

// ConsoleOf is the console backend of n (nil without a console).
func ConsoleOf(n *Node) *consoleBackend { return n.console }
