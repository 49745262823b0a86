package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/client"
	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/mcpserver"
	"github.com/mcptasks/mcptasks/store/memory"
)

// renderServer serves render_video, a task that reports its progress in its
// status message and asks one question, and returns its MCP endpoint and a
// function that stops it. Before going on after each progress message it
// waits for shown (if not nil) to say that the example printed it, so that
// the example's output is the same on every run; a real tool does not.
func renderServer(shown func(msg string) <-chan struct{}) (string, func()) {
	srv := mcpserver.New(&mcp.Implementation{Name: "render", Version: "1.0"}, &mcpserver.Options{
		Store:  memory.New(),
		Engine: &engine.Options{DefaultPollInterval: 20 * time.Millisecond},
	})
	type in struct {
		Frames int `json:"frames"`
	}
	err := mcpserver.AddTool(srv, &mcp.Tool{Name: "render_video", Description: "Render a video, frame by frame."},
		mcpserver.ToolOptions{Task: mcpserver.TaskRequired},
		func(ctx context.Context, _ *mcp.CallToolRequest, in in) (*mcp.CallToolResult, any, error) {
			ans, err := mcpserver.Elicit(ctx, "resolution", &mcp.ElicitParams{
				Message: fmt.Sprintf("Render %d frames in 4K?", in.Frames),
				RequestedSchema: map[string]any{
					"type":       "object",
					"properties": map[string]any{"uhd": map[string]any{"type": "boolean"}},
				},
			})
			if err != nil {
				return nil, nil, err
			}
			res := "1080p"
			if ans.Action == "accept" && ans.Content["uhd"] == true {
				res = "4K"
			}
			for i := 1; i <= in.Frames; i++ {
				msg := fmt.Sprintf("Rendering %d/%d", i, in.Frames)
				if err := mcpserver.SetStatus(ctx, msg); err != nil {
					return nil, nil, err
				}
				if shown != nil {
					select {
					case <-shown(msg):
					case <-ctx.Done():
						return nil, nil, ctx.Err()
					}
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("video.mp4: %d frames in %s", in.Frames, res)}}}, nil, nil
		})
	if err != nil {
		panic(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		panic(err)
	}
	ts := httptest.NewServer(srv.Handler())
	return ts.URL, func() {
		ts.Close()
		_ = srv.Shutdown(context.Background())
	}
}

// CallAndWait calls a tool and returns its final result, whether the
// server answers at once or with a task; OnStatus shows the task's
// progress as it happens, and the InputHandler answers its question.
func ExampleClient_CallAndWait() {
	shown := map[string]chan struct{}{"Rendering 1/2": make(chan struct{}), "Rendering 2/2": make(chan struct{})}
	url, stop := renderServer(func(msg string) <-chan struct{} { return shown[msg] })
	defer stop()

	c := client.New(url, &client.Options{
		InputHandler: client.InputHandlerFunc(func(_ context.Context, key string, req *client.InputRequest) (any, error) {
			fmt.Printf("asked %s: %s yes\n", key, req.Elicit.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"uhd": true}}, nil
		}),
	})
	res, err := c.CallAndWait(context.Background(), "render_video", map[string]any{"frames": 2},
		client.OnStatus(func(st *client.TaskStatus) {
			switch {
			case st.StatusMessage != "":
				fmt.Printf("%s: %s\n", st.Status, st.StatusMessage)
			case st.Terminal():
				fmt.Println(st.Status)
			}
			if ch := shown[st.StatusMessage]; ch != nil {
				close(ch)
			}
		}))
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// input_required: Render 2 frames in 4K?
	// asked resolution: Render 2 frames in 4K? yes
	// working: Rendering 1/2
	// working: Rendering 2/2
	// completed
	// video.mp4: 2 frames in 4K
}

// Resume finds the tasks a program started before it crashed in its
// Journal and waits for them again. Here the first client starts a task
// that waits for an answer and is dropped, as a crash would; a second one,
// with the same journal file, resumes it and answers.
func ExampleClient_Resume() {
	url, stop := renderServer(nil)
	defer stop()
	dir, err := os.MkdirTemp("", "journal")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	journal := client.FileJournal(filepath.Join(dir, "journal.json"))
	ctx := context.Background()

	// The first run: the task is in the journal before CallTool returns.
	first := client.New(url, &client.Options{Journal: journal})
	if _, err := first.CallTool(ctx, "render_video", map[string]any{"frames": 3}); err != nil {
		panic(err)
	}
	// ... the program crashes here ...

	// The next run.
	c := client.New(url, &client.Options{
		Journal: journal,
		InputHandler: client.InputHandlerFunc(func(_ context.Context, key string, req *client.InputRequest) (any, error) {
			fmt.Printf("asked %s: %s no\n", key, req.Elicit.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"uhd": false}}, nil
		}),
	})
	tasks, err := c.Resume(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Printf("resumed %d task of %s\n", len(tasks), tasks[0].Tool)
	for _, o := range c.WaitAll(ctx, tasks) {
		if o.Err != nil {
			fmt.Println("error:", o.Err)
			continue
		}
		fmt.Println(o.Result.Content[0].(*mcp.TextContent).Text)
	}
	entries, _ := journal.List(ctx)
	fmt.Println("journal says:", entries[0].Status, "answered", entries[0].AnsweredKeys)
	// Output:
	// resumed 1 task of render_video
	// asked resolution: Render 3 frames in 4K? no
	// video.mp4: 3 frames in 1080p
	// journal says: completed answered [resolution]
}

// A program that ended while its tools/call was on the wire left the call
// in its journal as a pending create. At its next start it resends the
// call with the same idempotency key: the server answers with the task the
// first request made, or makes it now if that request never arrived.
func ExampleClient_Resend() {
	url, stop := renderServer(nil)
	defer stop()
	dir, err := os.MkdirTemp("", "journal")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	journal := client.FileJournal(filepath.Join(dir, "journal.json"))
	ctx := context.Background()
	// The call as the first run left it (its tool, arguments and key):
	// CallTool saves the call before sending it.
	err = journal.Save(ctx, client.Entry{ServerURL: url, Tool: "render_video", Args: json.RawMessage(`{"frames":2}`),
		IdempotencyKey: "5NqkWv0rTq2bG8xYc1dM3w", CreatedAt: time.Now()})
	if err != nil {
		panic(err)
	}

	// The next run.
	c := client.New(url, &client.Options{
		Journal: journal,
		InputHandler: client.InputHandlerFunc(func(context.Context, string, *client.InputRequest) (any, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"uhd": true}}, nil
		}),
	})
	pending, err := c.Pending(ctx)
	if err != nil {
		panic(err)
	}
	for _, e := range pending {
		fmt.Println("pending:", e.Tool, string(e.Args))
		res, err := c.Resend(ctx, e)
		if err != nil {
			fmt.Println("still unknown:", err)
			continue
		}
		out := res.Result // answered at once, or
		if res.Task != nil {
			if out, err = res.Task.Wait(ctx); err != nil {
				panic(err)
			}
		}
		fmt.Println(out.Content[0].(*mcp.TextContent).Text)
	}
	pending, _ = c.Pending(ctx)
	fmt.Println("pending now:", len(pending))
	// Output:
	// pending: render_video {"frames":2}
	// video.mp4: 2 frames in 4K
	// pending now: 0
}
