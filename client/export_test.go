package client

// WithoutTasksExtension makes c leave the Tasks extension out of its
// declared capabilities, to test how servers refuse such clients.
func WithoutTasksExtension(c *Client) *Client {
	c.noTasks = true
	c.buildMeta()
	return c
}
