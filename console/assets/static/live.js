// Live updates of the mcptasks console: the element with data-live is
// replaced by what the page's event stream sends when tasks change (see
// console/live.go). Without JavaScript the pages work as they are, and a
// reload shows what changed.
"use strict";
(function () {
  var live = document.querySelector("[data-live]");
  if (!live || !window.EventSource) {
    return;
  }
  var source = new EventSource(live.getAttribute("data-live"));
  source.addEventListener("update", function (e) {
    live.innerHTML = e.data;
    live.setAttribute("data-updates", String(Number(live.getAttribute("data-updates") || 0) + 1));
  });
  source.addEventListener("signedout", function () {
    source.close();
    window.location.assign("/login?next=" + encodeURIComponent(window.location.pathname + window.location.search));
  });
  source.addEventListener("end", function () {
    source.close();
    live.insertAdjacentHTML("afterbegin", '<p class="notice">This task no longer exists: it expired and was deleted.</p>');
  });
})();
