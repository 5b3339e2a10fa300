// latchkey console: live charts on the overview and a quiet refresh of
// the locks and sessions pages. Everything works without it.
"use strict";
(function () {
  var body = document.body;

  // Refresh: re-fetch this page and swap <main> when it changed, unless
  // the user is typing in a form.
  var every = parseInt(body.getAttribute("data-refresh") || "0", 10);
  if (every > 0 && body.getAttribute("data-page") !== "overview") {
    setInterval(function () {
      var a = document.activeElement;
      if (a && (a.tagName === "INPUT" || a.tagName === "SELECT")) return;
      fetch(location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) {
          if (!html) return;
          var doc = new DOMParser().parseFromString(html, "text/html");
          var fresh = doc.getElementById("main"), cur = document.getElementById("main");
          if (fresh && cur && fresh.innerHTML !== cur.innerHTML) cur.innerHTML = fresh.innerHTML;
        })
        .catch(function () {});
    }, every);
  }

  var charts = document.getElementById("charts");
  if (!charts || typeof uPlot === "undefined") return;
  var hint = document.getElementById("charts-hint");
  if (hint) hint.textContent = "Sampled every 2 s from /-/api/overview (the counters /-/metrics exports); the last 5 minutes.";
  var N = 150, api = charts.getAttribute("data-api");
  var t = [], series = {};
  var defs = [
    { id: "commits", title: "Commits per second", labels: ["commits/s"] },
    { id: "batch", title: "Updates per commit", labels: ["updates/commit"] },
    { id: "fsync", title: "Commit latency, fsync included (ms)", labels: ["p50", "p99"] },
    { id: "req", title: "Requests per second by API", labels: ["consul", "s3", "ops"] }
  ];
  var colors = ["#2454c5", "#b3261e", "#137333"];
  var plots = {};
  defs.forEach(function (d) {
    var box = document.createElement("div");
    box.className = "chart no-points";
    box.setAttribute("data-chart", d.id);
    var h = document.createElement("h3");
    h.textContent = d.title;
    box.appendChild(h);
    charts.appendChild(box);
    series[d.id] = d.labels.map(function () { return []; });
    var opts = {
      width: Math.max(300, Math.floor(charts.clientWidth / 2) - 30), height: 150,
      series: [{}].concat(d.labels.map(function (l, i) { return { label: l, stroke: colors[i], width: 1.5 }; })),
      axes: [{}, { size: 60 }],
      // From zero; a series that is all zero (or has no points) gets
      // [0, 1], not a span too small for distinct tick labels.
      scales: { y: { range: function (u, min, max) { return [0, max > 0 ? max * 1.1 : 1]; } } },
      // The y axis's tick labels as drawn (on the canvas), kept where
      // tests and people can read them.
      hooks: { draw: [function (u) { box.setAttribute("data-yticks", (u.axes[1]._values || []).join(" ")); }] }
    };
    plots[d.id] = new uPlot(opts, [t].concat(series[d.id]), box);
    var none = document.createElement("p");
    none.className = "nodata";
    none.textContent = "no data";
    box.appendChild(none);
  });

  // Each chart says "no data" while none of its series has a point (a
  // latency with no commits in any interval, say).
  function markEmpty(d) {
    var empty = series[d.id].every(function (s) { return s.every(function (v) { return v === null; }); });
    var box = charts.querySelector('[data-chart="' + d.id + '"]');
    box.classList.toggle("no-points", empty);
  }

  // As Histogram.Quantile in metrics.go: linear inside the bucket; in
  // the +Inf bucket, the last finite bound.
  function quantile(bounds, counts, total, q) {
    if (!total) return null;
    var rank = q * total, below = 0, lo = 0;
    for (var i = 0; i < counts.length; i++) {
      if (counts[i] >= rank) {
        var inb = counts[i] - below;
        return inb ? lo + (bounds[i] - lo) * (rank - below) / inb : bounds[i];
      }
      below = counts[i]; lo = bounds[i];
    }
    return bounds[bounds.length - 1];
  }

  var prev = null, samples = 0;
  function field(name, v) {
    var el = document.querySelector('[data-field="' + name + '"]');
    if (el && v !== undefined) el.textContent = v;
  }
  function count(c) { return c ? c.n + (c.more ? "+" : "") : undefined; }
  function poll() {
    fetch(api, { credentials: "same-origin" }).then(function (r) { return r.ok ? r.json() : null; }).then(function (o) {
      if (!o) return;
      field("index", o.index); field("keys", count(o.keys)); field("sessions", count(o.sessions));
      field("buckets", count(o.buckets)); field("object_versions", count(o.object_versions));
      field("blocking_queries", o.blocking_queries); field("session_timers", o.session_timers);
      field("lock_delays", o.lock_delays); field("commits", o.metrics.commits); field("updates", o.metrics.updates);
      field("uptime", Math.round(o.uptime_ns / 1e9) + "s");
      var m = o.metrics;
      if (prev) {
        var dt = (m.time_ms - prev.time_ms) / 1000;
        if (dt <= 0) return;
        var dc = m.commits - prev.commits, du = m.updates - prev.updates;
        var req = m.requests || {}, preq = prev.requests || {};
        var dcounts = m.fsync.counts.map(function (c, i) { return c - (prev.fsync.counts[i] || 0); });
        var push = function (id, vals) {
          vals.forEach(function (v, i) { series[id][i].push(v); if (series[id][i].length > N) series[id][i].shift(); });
        };
        t.push(m.time_ms / 1000); if (t.length > N) t.shift();
        push("commits", [dc / dt]);
        push("batch", [dc > 0 ? du / dc : null]);
        var dn = m.fsync.count - prev.fsync.count;
        var p50 = quantile(m.fsync.bounds, dcounts, dn, 0.5), p99 = quantile(m.fsync.bounds, dcounts, dn, 0.99);
        push("fsync", [p50 === null ? null : p50 * 1000, p99 === null ? null : p99 * 1000]);
        push("req", ["consul", "s3", "ops"].map(function (a) { return ((req[a] || 0) - (preq[a] || 0)) / dt; }));
        defs.forEach(function (d) { plots[d.id].setData([t].concat(series[d.id])); markEmpty(d); });
      }
      prev = m;
      samples++;
      charts.setAttribute("data-samples", String(samples));
    }).catch(function () {});
  }
  poll();
  setInterval(poll, 2000);
})();
