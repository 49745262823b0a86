// Live updates of the mcptasks console: the element with data-live is
// replaced by what the page's event stream sends when tasks change (see
// console/live.go). Without JavaScript the pages work as they are, and a
// reload shows what changed.
//
// A page holds its stream only while it is shown: a browser gives a host
// six connections, so hidden tabs that kept theirs would leave the next
// page nothing to load with. A shown page opens the stream again and gets
// what it shows at once. A broken connection (the server down) says so
// above the content while the browser reconnects; a stream refused (too
// many live pages, the session gone) says so and is tried again every
// retryMs; a signed-out page goes to the sign-in page.
"use strict";
(function () {
  var live = document.querySelector("[data-live]");
  if (!live || !window.EventSource) {
    return;
  }
  var url = live.getAttribute("data-live");
  var retryMs = 10000;
  var source = null; // the open stream
  var retry = null; // the timer of the next try
  var ended = false; // the task is gone: nothing will change
  var notice = null;
  var probed = false; // whether the session was checked since the stream last opened

  function signIn() {
    window.location.assign("/login?next=" + encodeURIComponent(window.location.pathname + window.location.search));
  }
  function say(text) {
    if (!notice) {
      notice = document.createElement("p");
      notice.className = "notice live-stopped";
      live.parentNode.insertBefore(notice, live);
    }
    notice.textContent = text;
  }
  function unsay() {
    if (notice) {
      notice.remove();
      notice = null;
    }
  }
  function close() {
    if (source) {
      source.close();
      source = null;
    }
    if (retry) {
      clearTimeout(retry);
      retry = null;
    }
  }
  // stopped handles a stream the browser will not reopen (it does so only
  // after a network error): a session that is gone makes the page itself
  // redirect to the sign-in page, anything else is tried again later.
  function stopped() {
    close();
    say("Live updates stopped; trying again every " + retryMs / 1000 + " s. Reload the page to see the latest.");
    if (!probed) { // once: a HEAD of the page costs its reading
      probed = true;
      fetch(window.location.href, { method: "HEAD", redirect: "manual", credentials: "same-origin" }).then(function (r) {
        if (r.type === "opaqueredirect" || r.status === 401) {
          signIn();
        }
      }, function () {});
    }
    retry = setTimeout(function () {
      retry = null;
      open();
    }, retryMs);
  }
  function open() {
    if (source || retry || ended || document.hidden) {
      return;
    }
    var s = new EventSource(url);
    source = s;
    s.addEventListener("open", function () {
      probed = false;
      unsay();
    });
    s.addEventListener("error", function () {
      if (s !== source) {
        return;
      }
      if (s.readyState === EventSource.CLOSED) {
        stopped();
      } else { // the connection broke: the browser opens it again by itself
        say("Live updates interrupted; reconnecting.");
      }
    });
    s.addEventListener("update", function (e) {
      live.innerHTML = e.data;
      live.setAttribute("data-updates", String(Number(live.getAttribute("data-updates") || 0) + 1));
    });
    s.addEventListener("signedout", function () {
      close();
      signIn();
    });
    s.addEventListener("end", function () {
      ended = true;
      close();
      live.insertAdjacentHTML("afterbegin", '<p class="notice">This task no longer exists: it expired and was deleted.</p>');
    });
  }
  document.addEventListener("visibilitychange", function () {
    if (document.hidden) {
      close();
    } else {
      open();
    }
  });
  open();
})();
