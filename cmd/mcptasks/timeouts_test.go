package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSlowClients checks the server's timeouts against clients that are
// slow on purpose: one that never finishes its headers, one that never
// finishes its body, and one that keeps an idle connection open. Each
// connection is closed by the server, after its timeout and well before
// the test's own bound.
func TestSlowClients(t *testing.T) {
	addr := freeAddr(t)
	start(t, addr, "--store", "memory:", "--read-header-timeout", "300ms", "--read-timeout", "600ms", "--idle-timeout", "400ms")
	const body = `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`
	tests := []struct {
		name  string
		send  string
		reply bool // a complete request precedes the wait: read its reply first
		min   time.Duration
	}{
		{"headers", "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n", false, 300 * time.Millisecond},
		{"body", "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\"", false, 600 * time.Millisecond},
		{"idle", "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
			"MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: server/discover\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body, true, 400 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, tt.send); err != nil {
				t.Fatal(err)
			}
			sent := time.Now()
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // the test's own bound
			r := bufio.NewReader(conn)
			if tt.reply {
				status, err := r.ReadString('\n')
				if err != nil || !strings.Contains(status, " 200 ") && !strings.Contains(status, " 400 ") {
					t.Fatalf("reply to the request: %q, %v", status, err)
				}
				sent = time.Now()
			}
			_, err = io.Copy(io.Discard, r) // until the server closes
			took := time.Since(sent)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("the server kept the connection open for 10s")
			}
			if took < tt.min/2 {
				t.Errorf("closed after %s, before its timeout of %s", took, tt.min)
			}
			t.Logf("closed by the server after %s (timeout %s)", took.Round(time.Millisecond), tt.min)
		})
	}
}
