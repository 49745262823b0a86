package main

import "golang.org/x/sys/unix"

// hideFromCommands makes the process non-dumpable (prctl
// PR_SET_DUMPABLE 0), so that the commands it runs as its own user can no
// longer read its /proc/<pid>/environ, memory or file descriptors, nor
// trace it. It also turns off core dumps, and debuggers can attach only
// as root. Commands do not inherit the flag: exec resets it.
func hideFromCommands() error { return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }
