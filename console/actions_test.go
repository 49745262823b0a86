package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/task"
)

func TestCancel(t *testing.T) {
	forEach(t, false, func(t *testing.T, b backend) {
		h := newHarness(t, b, Options{}, false)
		held := h.put(asking(newTask(0, "export_report", "bob"), "Overwrite?"))
		queued := h.put(newTask(0, "render", "carol"))
		stored := func(id string) *task.Record {
			r, err := h.st.Get(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}

		// A viewer may not act, CSRF token or not.
		viewer := h.as(victorToken)
		wantPage(t, viewer.get("/tasks/"+held.ID), http.StatusOK)
		wantPage(t, viewer.post("/tasks/"+held.ID+"/cancel", url.Values{"csrf": {viewer.csrf}}), http.StatusForbidden, "Viewers cannot cancel tasks")

		// An operator needs the session's CSRF token.
		op := h.as(aliceToken)
		wantPage(t, op.get("/tasks/"+held.ID), http.StatusOK, "Cancel task")
		wantPage(t, op.post("/tasks/"+held.ID+"/cancel", url.Values{}), http.StatusForbidden, "did not carry this session&#39;s token")
		wantPage(t, op.post("/tasks/"+held.ID+"/cancel", url.Values{"csrf": {viewer.csrf}}), http.StatusForbidden)
		if r := stored(held.ID); r.CancelRequested || r.Status != task.InputRequired {
			t.Fatalf("refused cancels changed the task: %s, cancel requested %v", r.Status, r.CancelRequested)
		}

		// A cross-site form is refused before the token is looked at.
		req := httptest.NewRequest(http.MethodPost, "/tasks/"+held.ID+"/cancel", strings.NewReader(url.Values{"csrf": {op.csrf}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		if res := op.do(req); res.Code != http.StatusForbidden {
			t.Errorf("cross-site cancel = %d, want 403", res.Code)
		}

		// With the token: a held task gets a cancel request for its
		// worker; a queued one is cancelled at once.
		res := op.post("/tasks/"+held.ID+"/cancel", url.Values{"csrf": {op.csrf}})
		if loc := res.Header().Get("Location"); res.Code != http.StatusSeeOther || loc != "/tasks/"+held.ID {
			t.Fatalf("cancel = %d %q, want 303 back to the task", res.Code, loc)
		}
		if r := stored(held.ID); !r.CancelRequested {
			t.Errorf("held task after cancel: cancel requested %v, want true", r.CancelRequested)
		}
		wantPage(t, op.get("/tasks/"+held.ID), http.StatusOK, "cancel requested", "Cancel requested; the worker stops the task")
		wantNot(t, op.get("/tasks/"+held.ID), "Cancel task")
		// Its worker dies: the cancel request is not acted on, and the
		// operator may cancel again, which ends the task at once.
		h.now = t0.Add(3 * time.Hour) // past the lease
		wantPage(t, op.get("/tasks/"+held.ID), http.StatusOK, "Cancel task")
		op.post("/tasks/"+held.ID+"/cancel", url.Values{"csrf": {op.csrf}})
		if r := stored(held.ID); r.Status != task.Cancelled {
			t.Errorf("held task after a second cancel past its lease = %s, want cancelled", r.Status)
		}
		wantPage(t, op.get("/tasks/"+queued.ID), http.StatusOK)
		op.post("/tasks/"+queued.ID+"/cancel", url.Values{"csrf": {op.csrf}})
		if r := stored(queued.ID); r.Status != task.Cancelled || r.StatusMessage != engine.OperatorCancelMessage {
			t.Errorf("queued task after cancel = %s %q, want cancelled %q", r.Status, r.StatusMessage, engine.OperatorCancelMessage)
		}
		wantPage(t, op.post("/tasks/"+task.NewID()+"/cancel", url.Values{"csrf": {op.csrf}}), http.StatusNotFound)

		// Every action is in the log with the operator's name; no task data.
		log := h.log.String()
		for _, want := range []string{
			"console: cancel refused to a viewer\" operator=victor task=" + held.ID,
			"console: form without a valid CSRF token refused\" operator=alice",
			"console: cancel\" operator=alice task=" + held.ID + " tool=export_report status=input_required cancel_requested=true",
			"console: cancel\" operator=alice task=" + queued.ID + " tool=render status=cancelled",
		} {
			if !strings.Contains(log, want) {
				t.Errorf("log lacks %q:\n%s", want, log)
			}
		}
		for _, secret := range []string{"secret-plans.txt", "Overwrite?"} {
			if strings.Contains(log, secret) {
				t.Errorf("log holds task data %q", secret)
			}
		}
	})
}

// TestBodyBounded checks that a form larger than maxFormBytes is refused.
func TestBodyBounded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, memoryBackend, Options{}, false)
	r := h.put(newTask(0, "render", "carol"))
	op := h.as(aliceToken)
	op.get("/tasks/" + r.ID)
	big := url.Values{"csrf": {op.csrf}, "pad": {strings.Repeat("x", maxFormBytes)}}
	wantPage(t, op.post("/tasks/"+r.ID+"/cancel", big), http.StatusBadRequest)
	wantPage(t, h.anonymous().post("/login", url.Values{"token": {strings.Repeat("x", 2*maxFormBytes)}}), http.StatusBadRequest)
}
