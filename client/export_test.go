package client

// WithoutTasksExtension makes c leave the Tasks extension out of its
// declared capabilities, to test how servers refuse such clients.
func WithoutTasksExtension(c *Client) *Client {
	c.noTasks = true
	c.buildMeta()
	return c
}

// FileJournalFailingRename returns a FileJournal of path whose writes fail
// with err where they rename the temporary file over the journal, after
// writing and syncing it.
func FileJournalFailingRename(path string, err error) Journal {
	return &fileJournal{path: path, rename: func(string, string) error { return err }}
}
