//go:build unix

package client

import (
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes an exclusive lock on the file at path (created 0600 if
// missing), waiting for it: the lock of a journal's changes across
// processes. unlock releases it.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, &os.PathError{Op: "flock", Path: path, Err: err}
	}
	return func() { f.Close() }, nil // closing the file releases the lock
}
