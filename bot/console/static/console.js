// askdesk console: the little the pages need beyond plain forms (every page works without it).
(function () {
  "use strict";
  // A destructive form asks first (data-confirm="…").
  document.addEventListener("submit", function (event) {
    var message = event.target.getAttribute && event.target.getAttribute("data-confirm");
    if (message && !window.confirm(message)) event.preventDefault();
  });
  // While a source syncs, poll its job and reload the page when every sync has ended.
  if (!document.querySelector("[data-sync-running]")) return;
  function poll() {
    fetch("/api/sync-jobs", { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (response.status === 401) { window.location.assign("/login"); return null; }
        return response.json();
      })
      .then(function (jobs) {
        if (!jobs) return;
        var running = Object.keys(jobs).some(function (name) { return jobs[name].state === "running"; });
        if (running) window.setTimeout(poll, 700); else window.location.reload();
      })
      .catch(function () { window.setTimeout(poll, 2000); });
  }
  window.setTimeout(poll, 500);
})();
