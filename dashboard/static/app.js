// kinetic dashboard: live updates by polling the JSON endpoints (with ETags), ages that
// tick, logs that follow, and a confirm() before every action.
(function () {
  "use strict";
  var poll = parseInt(document.body.dataset.pollMs || "2000", 10);
  var live = document.getElementById("live");

  function fmt(s) {
    if (s < 1) return Math.round(s * 1000) + "ms";
    if (s < 10) return s.toFixed(1) + "s";
    if (s < 60) return Math.floor(s) + "s";
    if (s < 3600) return Math.floor(s / 60) + "m" + String(Math.floor(s % 60)).padStart(2, "0") + "s";
    if (s < 86400) return Math.floor(s / 3600) + "h" + String(Math.floor(s % 3600 / 60)).padStart(2, "0") + "m";
    return Math.floor(s / 86400) + "d" + Math.floor(s % 86400 / 3600) + "h";
  }
  function tick() {
    var now = Date.now();
    document.querySelectorAll("time[data-t]").forEach(function (e) {
      e.textContent = fmt(Math.max(0, (now - +e.dataset.t) / 1000)) + " ago";
    });
    document.querySelectorAll("time[data-since]").forEach(function (e) {
      e.textContent = fmt(Math.max(0, (now - +e.dataset.since) / 1000));
    });
  }
  tick();
  setInterval(tick, 1000);

  document.querySelectorAll("form[data-confirm]").forEach(function (f) {
    f.addEventListener("submit", function (ev) {
      if (!window.confirm(f.dataset.confirm)) ev.preventDefault();
    });
  });

  function setLive(ok) { if (live) live.className = ok ? "live" : "live off"; }

  // repeat calls fn every poll ms until it returns false.
  function repeat(fn) {
    var go = function () {
      fn().then(function (more) { if (more !== false) setTimeout(go, poll); },
        function () { setLive(false); setTimeout(go, poll * 2); });
    };
    setTimeout(go, poll);
  }
  function getJSON(url, etag) {
    var h = { "Accept": "application/json" };
    if (etag) h["If-None-Match"] = etag;
    return fetch(url, { headers: h, credentials: "same-origin" }).then(function (r) {
      setLive(r.ok || r.status === 304);
      if (r.status === 304) return { notModified: true };
      if (!r.ok) throw new Error("HTTP " + r.status);
      return r.json().then(function (j) { return { etag: r.headers.get("ETag"), data: j }; });
    });
  }

  // The jobs table.
  var jobs = document.getElementById("jobs");
  if (jobs) {
    var etag = null;
    repeat(function () {
      return getJSON(jobs.dataset.src, etag).then(function (r) {
        if (r.notModified) return;
        etag = r.etag;
        document.getElementById("rows").innerHTML = r.data.rows_html;
        document.getElementById("pager").innerHTML = r.data.pager_html;
        var t = document.getElementById("total");
        if (t) t.textContent = r.data.total + " of " + r.data.in_store + " jobs";
        tick();
      });
    });
  }

  // One job: state and timeline, until final; then the page is drawn again once
  // (for the result or the traceback).
  var tl = document.getElementById("timeline");
  if (tl && tl.dataset.final !== "true") {
    repeat(function () {
      return getJSON(tl.dataset.src).then(function (r) {
        var d = r.data;
        tl.innerHTML = d.timeline_html;
        var st = document.getElementById("state");
        if (st) st.innerHTML = '<span class="badge ' + cls(d.status) + '">' + d.status + "</span>";
        var rs = document.getElementById("reason");
        if (rs) rs.textContent = d.reason || "";
        if (d.final) { setTimeout(function () { location.reload(); }, 600); return false; }
      });
    });
  }
  function cls(s) {
    return { SUCCEEDED: "ok", FAILED: "bad", RUNNING: "run", PENDING: "wait", ERROR: "err" }[s] || "gone";
  }

  // Logs that follow.
  var log = document.getElementById("log");
  if (log) {
    var next = null, follow = document.getElementById("follow");
    var step = function () {
      var url = log.dataset.src + (next === null ? "" : "?offset=" + next);
      return fetch(url, { credentials: "same-origin" }).then(function (r) {
        if (!r.ok) throw new Error("HTTP " + r.status);
        var n = +r.headers.get("X-Next-Offset"), fin = r.headers.get("X-Final") === "1";
        if (next === null && +r.headers.get("X-Start-Offset") > 0) log.textContent = "… (earlier output cut)\n";
        return r.text().then(function (t) {
          var atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 8;
          if (t) log.appendChild(document.createTextNode(t));
          if (t && follow && follow.checked && atEnd) log.scrollTop = log.scrollHeight;
          var more = n > (next === null ? 0 : next);
          next = n;
          if (fin && !log.textContent) log.textContent = "(no output)";
          log.dataset.final = fin ? "true" : "false";
          return fin ? false : more ? "again" : true;
        });
      });
    };
    var loop = function () {
      step().then(function (v) {
        if (v === false) return;
        setTimeout(loop, v === "again" ? 50 : Math.min(poll, 1000));
      }, function () { setTimeout(loop, poll * 2); });
    };
    loop();
  }

  // One batch: progress, chart and failures until every child is final.
  var b = document.getElementById("batch");
  if (b && b.dataset.final !== "true") {
    repeat(function () {
      return getJSON(b.dataset.src).then(function (r) {
        var d = r.data;
        document.getElementById("counts").innerHTML = d.counts_html;
        document.getElementById("gantt").innerHTML = d.gantt_html;
        document.getElementById("failures").innerHTML = d.failures_html;
        if (d.final) { setTimeout(function () { location.reload(); }, 600); return false; }
      });
    });
  }
})();
