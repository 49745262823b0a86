package console

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/mcptasks/mcptasks/engine"
)

// cancel cancels the task of the path, for an operator (not a viewer),
// with the session's CSRF token, and logs it with the operator's name.
func (c *Console) cancel(w http.ResponseWriter, r *http.Request, se *session) {
	id := r.PathValue("id")
	if !se.account.CanAct() {
		c.log.Warn("console: cancel refused to a viewer", "operator", se.account.Name, "task", id)
		c.errorPage(w, se, http.StatusForbidden, "Viewers cannot cancel tasks: sign in with an operator's token.")
		return
	}
	if !c.checkForm(w, r, se) {
		return
	}
	rec, err := c.canceler.CancelAsOperator(r.Context(), id)
	switch {
	case errors.Is(err, engine.ErrNotFound):
		c.log.Info("console: cancel of an unknown task", "operator", se.account.Name, "task", id)
		c.errorPage(w, se, http.StatusNotFound, "No task has that id: it may have expired and been deleted.")
		return
	case err != nil:
		c.log.Error("console: cancel failed", "operator", se.account.Name, "task", id, "err", err)
		c.errorPage(w, se, http.StatusInternalServerError, "The task could not be cancelled: the store did not answer. Try again.")
		return
	}
	c.log.Info("console: cancel", "operator", se.account.Name, "task", id, "tool", rec.Tool,
		"status", rec.Status, "cancel_requested", rec.CancelRequested)
	http.Redirect(w, r, "/tasks/"+url.PathEscape(id), http.StatusSeeOther)
}
