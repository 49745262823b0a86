package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestListenURL: a listener on every address is logged with the host
// asked for (not the [::] of the dual-stack socket) and the port it got.
func TestListenURL(t *testing.T) {
	for _, tt := range []struct {
		listen string
		addr   *net.TCPAddr
		want   string
	}{
		{"127.0.0.1:8080", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}, "http://127.0.0.1:8080"},
		{"0.0.0.0:8080", &net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}, "http://0.0.0.0:8080"},
		{"0.0.0.0:0", &net.TCPAddr{IP: net.IPv6unspecified, Port: 41234}, "http://0.0.0.0:41234"},
		{"[::]:8080", &net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}, "http://[::]:8080"},
		{":8080", &net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}, "http://0.0.0.0:8080"},
		{"localhost:8080", &net.TCPAddr{IP: net.IPv6loopback, Port: 8080}, "http://[::1]:8080"},
	} {
		if got := listenURL(tt.listen, tt.addr); got != tt.want {
			t.Errorf("listenURL(%q, %s) = %q, want %q", tt.listen, tt.addr, got, tt.want)
		}
	}
}

// TestReadSessionKey_TooShort: a key file too short is refused with a
// command that makes a new key in a new file beside it, never one that
// writes over the file given (replicas may share it).
func TestReadSessionKey_TooShort(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "session.key")
	if err := os.WriteFile(path, []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := readSessionKey(path)
	if err == nil {
		t.Fatal("a 5-byte key was taken")
	}
	msg := err.Error()
	if want := "> " + path + ".new)"; !strings.Contains(msg, "holds 5 bytes; it needs at least 32") || !strings.Contains(msg, want) {
		t.Errorf("error %q; want the size and a new file (%q)", msg, want)
	}
	if strings.Contains(msg, "> "+path+")") {
		t.Errorf("error %q suggests writing over %s", msg, path)
	}
}
