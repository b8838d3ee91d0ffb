package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTick is the unit of /proc/<pid>/stat's utime and stime (USER_HZ,
// 100 on Linux).
const clockTick = 10 * time.Millisecond

// processCPU returns the user+system CPU time process pid used so far, or
// 0 when /proc cannot tell.
func processCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	k, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(u+k) * clockTick
}

// selfCPU returns the user+system CPU time this process used so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
