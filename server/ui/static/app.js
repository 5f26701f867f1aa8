// Sluice dashboard: live numbers and "select all". Every page works without this script
// (confirmations are pages of the server, not browser dialogs).
"use strict";
(function () {
  // A job or task list's "select all" box: it ticks every box of its form (listened for on the
  // document, so a list replaced in place keeps it).
  document.addEventListener("change", function (e) {
    var all = e.target;
    if (all.id !== "select-all" || !all.form) { return; }
    all.form.querySelectorAll('input[name="id"], input[name="lease"]').forEach(function (b) { b.checked = all.checked; });
  });
  // Live numbers: the page names its JSON twin in data-poll; each element with data-live (text)
  // or data-points (a chart line) is updated in place. A page in the background stops polling.
  var main = document.getElementById("main");
  var url = main && main.getAttribute("data-poll");
  if (!url) { return; }
  var every = 2000, timer = null, busy = false, relisting = false;
  // A live list (id="live-layout": queues, servers, an endpoint's tasks) names what it lists in
  // data-layout; when a poll says the list changed (a queue was created or deleted, a task
  // started or ended), the list is read again from the page's own URL and replaced in place,
  // unless boxes of it are ticked (a selection is not taken away under the pointer).
  function relist(data) {
    var box = document.getElementById("live-layout");
    if (!box || relisting || data.layout === undefined || box.getAttribute("data-layout") === data.layout) { return; }
    if (box.querySelector("input[type=checkbox]:checked")) { return; }
    relisting = true;
    fetch(location.href, { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        var fresh = html && new DOMParser().parseFromString(html, "text/html").getElementById("live-layout");
        if (fresh) { box.replaceWith(document.importNode(fresh, true)); }
      })
      .catch(function () { main.setAttribute("data-stale", ""); })
      .finally(function () { relisting = false; });
  }
  function apply(data) {
    relist(data);
    document.querySelectorAll("[data-live]").forEach(function (el) {
      var v = data[el.getAttribute("data-live")];
      if (v !== undefined && el.textContent !== v) { el.textContent = v; }
    });
    document.querySelectorAll("[data-points]").forEach(function (el) {
      var v = data[el.getAttribute("data-points")];
      if (v !== undefined) { el.setAttribute("points", v); }
    });
  }
  function poll() {
    if (busy || document.hidden) { return; }
    busy = true;
    fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (d) {
        if (!d) { main.setAttribute("data-stale", ""); return; }
        apply(d);
        main.removeAttribute("data-stale");
        // Other scripts of the page (a live chart) get the numbers too.
        document.dispatchEvent(new CustomEvent("sluice:live", { detail: d }));
      })
      .catch(function () { main.setAttribute("data-stale", ""); })
      .finally(function () { busy = false; });
  }
  timer = setInterval(poll, every);
  document.addEventListener("visibilitychange", function () { if (!document.hidden) { poll(); } });
})();
