package main

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestCloseInheritedOnExec checks that each way of marking descriptors
// close-on-exec marks one that lacked the flag.
func TestCloseInheritedOnExec(t *testing.T) {
	tests := []struct {
		name string
		mark func() error
	}{
		{name: "CloseRange", mark: closeInheritedOnExec},
		{name: "ProcSelfFD", mark: closeOnExecFromProc},
	}
	for _, tt := range tests {
		// Not in parallel: each marks every descriptor of the process,
		// the other's pipe too.
		t.Run(tt.name, func(t *testing.T) {
			var p [2]int
			if err := unix.Pipe2(p[:], 0); err != nil { // without O_CLOEXEC
				t.Fatal(err)
			}
			t.Cleanup(func() {
				unix.Close(p[0])
				unix.Close(p[1])
			})
			if err := tt.mark(); err != nil {
				t.Fatal(err)
			}
			for _, fd := range p {
				flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
				if err != nil {
					t.Fatal(err)
				}
				if flags&unix.FD_CLOEXEC == 0 {
					t.Errorf("descriptor %d: flags %#x, want FD_CLOEXEC", fd, flags)
				}
			}
		})
	}
}
