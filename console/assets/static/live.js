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

  // focusKey returns a selector of el, the element with the focus, if it
  // is inside the live element: its data-focus-key, which the templates
  // give the links and buttons there, or its id. An update replaces them
  // all, so the update gives the focus back to the element of the same
  // key; without it a keyboard's or a screen reader's user would be sent
  // back to the top of the page at each update.
  function focusKey(el) {
    if (!el || el === live || !live.contains(el)) {
      return null;
    }
    var k = el.getAttribute("data-focus-key");
    return k ? keyed("", k) : el.id ? "#" + CSS.escape(el.id) : null;
  }
  // keyed returns the selector of the elements of tag (any, if "") whose
  // data-focus-key is k.
  function keyed(tag, k) {
    return tag + '[data-focus-key="' + CSS.escape(k) + '"]';
  }
  function signIn() {
    window.location.assign("/login?next=" + encodeURIComponent(window.location.pathname + window.location.search));
  }
  function say(text) {
    if (!notice) {
      notice = document.createElement("p");
      notice.className = "notice live-stopped";
      notice.setAttribute("role", "status");
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
      var key = focusKey(document.activeElement);
      // The sections the reader opened stay open (a held task's page is
      // updated at each renewal of its lease).
      var opened = Array.prototype.map.call(live.querySelectorAll("details[open] > summary[data-focus-key]"), function (el) {
        return el.getAttribute("data-focus-key");
      });
      live.innerHTML = e.data;
      opened.forEach(function (k) {
        var el = live.querySelector(keyed("summary", k));
        if (el) {
          el.parentNode.open = true;
        }
      });
      var again = key && live.querySelector(key);
      if (again) {
        again.focus({ preventScroll: true });
      }
      live.setAttribute("data-updates", String(Number(live.getAttribute("data-updates") || 0) + 1));
    });
    s.addEventListener("signedout", function () {
      close();
      signIn();
    });
    s.addEventListener("end", function () {
      ended = true;
      close();
      live.insertAdjacentHTML("afterbegin", '<p class="notice" role="status">This task no longer exists: it expired and was deleted.</p>');
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
