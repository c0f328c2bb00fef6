// Mooring portal UI: refreshes the live part of a page while it is open, by polling the
// same URL with the X-Mooring-Live header. The server answers 304 when nothing changed.
// Everything works without this file; it only saves reloading.
(function () {
  "use strict";
  var body = document.body;
  var live = document.getElementById("live");
  if (!body || !live || !body.dataset.poll) {
    return;
  }
  var interval = parseInt(body.dataset.poll, 10) || 3000;
  var url = live.dataset.live;
  var etag = "";
  var busy = false;

  function poll() {
    // Never replace what someone is typing into or has focused.
    if (busy || document.hidden || live.contains(document.activeElement) && document.activeElement !== document.body) {
      return;
    }
    busy = true;
    var headers = { "X-Mooring-Live": "1" };
    if (etag) {
      headers["If-None-Match"] = etag;
    }
    fetch(url, { headers: headers, credentials: "same-origin", redirect: "error", cache: "no-store" })
      .then(function (resp) {
        if (resp.status === 200) {
          etag = resp.headers.get("ETag") || "";
          return resp.text().then(function (html) {
            live.innerHTML = html; // server-rendered, escaped by html/template
            live.dataset.refreshed = String(Date.now());
          });
        }
        if (resp.status === 401) {
          window.clearInterval(timer);
          var p = document.createElement("p");
          p.className = "error";
          p.textContent = "Your session has ended; reload the page to log in again.";
          live.prepend(p);
        }
      })
      .catch(function () { /* the next poll tries again */ })
      .then(function () { busy = false; });
  }
  var timer = window.setInterval(poll, interval);
  // Refresh tokens are single-use: a poll and a navigation that both renew an expired
  // session at once would spend one token twice, which ends the session. Polling stops
  // as soon as the page is being left.
  function stop() { window.clearInterval(timer); }
  window.addEventListener("beforeunload", stop);
  document.addEventListener("submit", stop);
})();
