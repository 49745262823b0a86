package mcpserver

// InflightBytes returns the bytes of s's in-flight budget that requests
// hold now, for tests that must wait for a request to take or give back
// its share.
func InflightBytes(s *Server) int64 {
	s.inflight.mu.Lock()
	defer s.inflight.mu.Unlock()
	return s.inflight.used
}
