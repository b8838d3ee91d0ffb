package process

// LoopbackOnly exposes loopbackOnly to the package's external tests.
var LoopbackOnly = loopbackOnly

// HAVerifyMaster exposes haVerifyMaster to the package's external tests.
var HAVerifyMaster = haVerifyMaster
