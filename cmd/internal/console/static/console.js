// wheelmq console: refresh the page's live part every 2 s while the tab
// is visible (GET ?partial=1, which renders only that part). No library.
(function () {
  "use strict";
  var live = document.querySelector("[data-live]");
  if (!live) { return; }
  var busy = false;
  function partialURL() {
    var u = new URL(window.location.href);
    u.searchParams.set("partial", "1");
    u.searchParams.delete("flash");
    return u.toString();
  }
  function refresh() {
    if (busy || document.hidden) { return; }
    busy = true;
    fetch(partialURL(), { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) {
        if (r.redirected || !r.ok) { throw new Error("status " + r.status); }
        return r.text();
      })
      .then(function (html) { live.innerHTML = html; live.dataset.refreshed = String(Date.now()); })
      .catch(function () { live.dataset.stale = "1"; })
      .then(function () { busy = false; });
  }
  window.setInterval(refresh, 2000);
  document.addEventListener("visibilitychange", refresh);
})();
