package process

// LoopbackOnly exposes loopbackOnly to the package's external tests.
var LoopbackOnly = loopbackOnly

// ConsoleExposure exposes consoleExposure to the package's external tests.
var ConsoleExposure = consoleExposure
