// Package client calls the tools of MCP 2026-07-28 servers over Streamable
// HTTP and follows the tasks they make of the calls (the Tasks extension,
// io.modelcontextprotocol/tasks). It speaks the experimental tasks of MCP
// 2025-11-25 too, behind the same API (see [Options.ProtocolVersion]).
//
// # Calling a tool
//
// [Client.CallAndWait] is the one call most programs need: it returns the
// tool's final result whether the server answers at once, after input
// rounds (MRTR: the server asks, the client answers and sends the call
// again), or with a task that it then waits for:
//
//	c := client.New("http://127.0.0.1:8080/mcp", &client.Options{InputHandler: ask})
//	res, err := c.CallAndWait(ctx, "render_video", map[string]any{"frames": 4},
//		client.OnStatus(func(st *client.TaskStatus) {
//			fmt.Println(st.Status, st.StatusMessage) // "working Rendering 2/4"
//		}))
//
// [OnStatus] sees each change of the task's status and status message as
// it happens, so that showing progress needs no loop of one's own;
// [OnTask] gets the task's handle as soon as it exists (to print its id or
// cancel it). A failed or cancelled task is a *[TaskError]; a tool error
// is a result with IsError set, as the protocol says.
//
// [Client.CallTool] is the lower step: it returns the result, or a [Task]
// handle without waiting. [Task.Wait] waits for a handle with the same
// options, [Task.Get], [Task.Update] and [Task.Cancel] send tasks/get,
// tasks/update and tasks/cancel.
//
// # Questions
//
// A server asks for input (an elicitation form, or sampling or roots)
// in an MRTR round of the call or in a task's inputRequests. A client
// declares form elicitation by default ([Options.Capabilities] changes
// that), and answers in one of three ways:
//
//   - An [InputHandler] ([Options.InputHandler], or [WithInputHandler] for
//     one wait) is asked each question once and its answer is sent, with
//     the retried call or with tasks/update.
//   - Without one, a wait that meets a task's question returns an
//     *[InputRequiredError] carrying the questions and the task's handle:
//     answer with [Task.Update] and Wait again, now or from another
//     process (the task keeps waiting on the server). An MRTR round cannot
//     be resumed that way: give such calls an InputHandler.
//   - With [ManualInput], a wait reports questions through [OnStatus] and
//     keeps waiting while the program answers them with [Task.Update]
//     whenever it likes (a user interface, another goroutine).
//
// Keys answered once are not asked again, also after [Task.Update] by
// another program when the [Journal] records it (as "mcptasks answer"
// does).
//
// # Waiting: notifications or polling
//
// A wait subscribes to the task's notifications/tasks with
// subscriptions/listen when the server offers them (its acknowledgement
// lists the task), reads the task once with tasks/get after the
// acknowledgement, and then follows the notifications, reading tasks/get
// again only every [Options.ListenBackstop] in case one was lost. A server
// that does not offer them (no such method, or an acknowledgement without
// the task), and a stream that breaks, leave the wait polling tasks/get
// every pollIntervalMs, as the server suggests, within
// [Options.MinPollInterval] and [Options.MaxPollInterval]. [PollOnly]
// skips the subscription. Transient failures (transport errors such as a
// refused connection, HTTP 5xx, -32603) are retried with pauses that grow
// up to 5 s, for [Options.RetryBudget] (2 minutes by default, to ride out
// a restart or a deploy of the server); a wait that gives up returns an
// *[UnavailableError]: the task may still be running, and waiting again
// takes it up. [Options.RequestTimeout] bounds each request without
// cutting subscriptions short.
//
// [Client.WaitAll] and [Client.Watch] wait for many tasks with one
// scheduling loop, at most [Options.MaxInFlight] requests at once and one
// subscription for all of them.
//
// # Surviving a crash
//
// A [Journal] ([FileJournal], [MemoryJournal]) records each task before
// [Client.CallTool] returns its handle, with its last seen status and the
// input keys answered; after a restart, [Client.Resume] returns the
// handles of the tasks that were not seen to end, to wait for again.
// A call is recorded before it is sent, as a pending create
// ([Entry.Pending]) that the task's entry replaces (a call the journal
// cannot record is not sent; one that failed before it reached the server,
// such as a refused connection or a failed TLS handshake, is removed):
// when a program ends while the call is on the wire, [Client.Pending]
// lists the call at the next start and [Client.Resend] sends it again with
// its idempotency key, getting the task the first request made (from a
// server that honours keys, within the task's TTL; a call the server
// answers at once runs again).
//
// # Creating a task exactly once
//
// Every tools/call carries a new idempotency key; when its outcome is
// unknown (the reply was lost), the client sends it again with the same
// key, up to [Options.CreateRetries] times, to servers that honour keys,
// and gets the task the first request made instead of a second one.
//
// # Errors
//
// JSON-RPC errors are *[Error] values that match the sentinels of their
// codes with errors.Is ([ErrInvalidParams] for an unknown or expired task,
// [ErrMissingCapability], …); HTTP replies without a JSON-RPC body are
// *[HTTPError], transport failures *[TransportError].
//
// # The wire
//
// Every request is a stateless POST that carries its own _meta (protocol
// version, client capabilities, client info) and the routing headers
// (MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Param-*); replies may
// be JSON or SSE. The golden transcripts in testdata/wire show what the
// client sends and makes of each reply, the subscription's included.
package client
