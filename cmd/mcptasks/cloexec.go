package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// closeInheritedOnExec marks every file descriptor above stderr
// close-on-exec, so that the commands the server runs do not inherit
// those the server inherited from its own parent (a shell's, a
// supervisor's): Go opens its own descriptors close-on-exec, but one that
// came in without the flag would be passed on to every command. It uses
// close_range(2), or, before Linux 5.11, each descriptor in /proc/self/fd.
func closeInheritedOnExec() error {
	err := unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC)
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) {
		return closeOnExecFromProc()
	}
	return err
}

// closeOnExecFromProc marks every descriptor above stderr listed in
// /proc/self/fd close-on-exec.
func closeOnExecFromProc() error {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd < 3 {
			continue
		}
		// The directory's own descriptor is listed too, and closed by now.
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && !errors.Is(err, unix.EBADF) {
			return fmt.Errorf("descriptor %d: %w", fd, err)
		}
	}
	return nil
}
