// Sluice dashboard: a live chart. A <figure class="livechart"> names live keys in data-series
// (space-separated) and a time span in seconds in data-span; each time the page's numbers are
// polled (app.js sends "sluice:live"), it adds a point per series and redraws the lines. The x axis
// covers the time since the first point (at least a minute, at most the span: data-axis="start"
// and "mid" say how far back), the y axis their highest value (data-axis="max"). The points live
// in the page only: a reload starts a new chart.
"use strict";
(function () {
  var X0 = 40, X1 = 315, Y0 = 95, Y1 = 8;
  document.querySelectorAll("figure.livechart").forEach(function (fig) {
    var keys = (fig.getAttribute("data-series") || "").split(" ").filter(Boolean);
    var span = 1000 * (Number(fig.getAttribute("data-span")) || 300);
    var points = {};
    keys.forEach(function (k) { points[k] = []; });
    function add(data, now) {
      keys.forEach(function (k) {
        var v = Number(data[k]);
        if (data[k] !== undefined && isFinite(v)) { points[k].push([now, v]); }
        while (points[k].length && points[k][0][0] < now - span) { points[k].shift(); }
      });
    }
    // niceMax rounds the highest value up to 1, 2 or 5 times a power of ten (at least 1).
    function niceMax(v) {
      if (v <= 1) { return 1; }
      var p = Math.pow(10, Math.floor(Math.log10(v)));
      var m = v / p;
      return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
    }
    var since = Date.now();
    function ago(ms) {
      var s = Math.round(ms / 1000);
      return "−" + (s < 90 ? s + " s" : (Math.round(s / 30) / 2) + " min");
    }
    function axis(name, text) {
      var el = fig.querySelector('[data-axis="' + name + '"]');
      if (el) { el.textContent = text; }
    }
    function draw(now) {
      var win = Math.min(span, Math.max(60000, now - since));
      axis("start", ago(win));
      axis("mid", ago(win / 2));
      var top = 0;
      keys.forEach(function (k) { points[k].forEach(function (p) { top = Math.max(top, p[1]); }); });
      top = niceMax(top);
      axis("max", String(top));
      keys.forEach(function (k) {
        var line = fig.querySelector('[data-line="' + k + '"]');
        if (!line) { return; }
        line.setAttribute("points", points[k].map(function (p) {
          var x = X0 + (X1 - X0) * (p[0] - (now - win)) / win;
          var y = Y0 - (Y0 - Y1) * p[1] / top;
          return x.toFixed(1) + "," + y.toFixed(1);
        }).join(" "));
      });
    }
    // The first point: the numbers the page was rendered with.
    var first = {};
    keys.forEach(function (k) {
      var el = document.querySelector('[data-live="' + k + '"]');
      if (el) { first[k] = el.textContent; }
    });
    add(first, Date.now());
    draw(Date.now());
    document.addEventListener("sluice:live", function (ev) {
      var now = Date.now();
      add(ev.detail, now);
      draw(now);
    });
  });
})();
