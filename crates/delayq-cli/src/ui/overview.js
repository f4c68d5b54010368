// The overview's state filter and snapshot age, each queue's rates and live processes, and in
// the queue view its last hour and last 90 days of activity and the processes serving it. Loaded after app.js,
// whose `more` hooks it fills in.
"use strict";
const KINDS = ["moved", "taken", "acked", "failed"];
const SVG = "http://www.w3.org/2000/svg";

more.query = () => "&state=" + encodeURIComponent($("#state").value);
more.page = (data) => {
  setText($("#snapshot"), data.snapshot
    ? "order as read " + span(data.snapshot.age_ms) + " ago" +
      (data.snapshot.unread ? " (" + data.snapshot.unread + " not read yet, last)" : "")
    : "");
};
// Two cells after the state: the average per minute of each kind, and the live processes.
more.cells = (q) => {
  if (!q.activity) return ["", ""];
  const a = q.activity;
  const per = (k) => String(Math.round((a[k] / a.minutes) * 10) / 10);
  return [KINDS.map(per).join(" · "), String(q.processes)];
};
more.detail = (name) => {
  const base = "api/queues/" + encodeURIComponent(name);
  getJson(base + "/activity").then((d) => { if (name === view.selected) drawActivity(d); }, () => {});
  getJson(base + "/days").then((d) => { if (name === view.selected) drawDays(d); }, () => {});
  getJson(base + "/processes").then((d) => { if (name === view.selected) fillProcesses(d); }, () => {});
};
$("#state").onchange = () => { view.offset = 0; refresh(); };

// One line a kind over the minutes, all on one scale; a minute's counts in its tooltip.
function drawActivity(d) {
  drawLines($("#activity"), d.minutes, [[0, "-60 min"], [0.5, "-30 min"], [1, "now"]], "last hour");
}

// One line a kind over the days, dated on the x axis; each day's counts in the tooltip of its
// column.
function drawDays(d) {
  const svg = $("#days");
  const n = d.days.length;
  const dates = n ? [[0, d.days[0].date], [0.5, d.days[Math.floor((n - 1) / 2)].date], [1, d.days[n - 1].date]] : [];
  drawLines(svg, d.days, dates, "last " + n + " days");
  const columns = group(svg, "columns");
  while (columns.children.length > n) columns.lastChild.remove();
  const step = PLOT.width / Math.max(1, n - 1);
  d.days.forEach((day, i) => {
    let r = columns.children[i];
    if (!r) {
      r = columns.appendChild(document.createElementNS(SVG, "rect"));
      r.setAttribute("class", "day");
      r.appendChild(document.createElementNS(SVG, "title"));
    }
    r.setAttribute("x", PLOT.left + (i - 0.5) * step);
    r.setAttribute("y", PLOT.top);
    r.setAttribute("width", step);
    r.setAttribute("height", PLOT.height);
    r.dataset.date = day.date;
    setText(r.firstChild, day.date + ": " + KINDS.map((k) => day[k] + " " + k).join(", "));
  });
}

// `rows` (oldest first) as one line a kind, all on one scale from 0 to the largest count, the
// x axis's `ticks` under them; the totals in the chart's tooltip (`what` says over what) and in
// its `data-totals`.
function drawLines(svg, rows, ticks, what) {
  const max = Math.max(1, ...rows.flatMap((m) => KINDS.map((k) => m[k])));
  axes(svg, max, ticks);
  const step = PLOT.width / Math.max(1, rows.length - 1);
  const y = (n) => PLOT.top + PLOT.height - Math.round((n / max) * PLOT.height);
  KINDS.forEach((k, i) => {
    let line = svg.querySelector("polyline." + k);
    if (!line) {
      line = document.createElementNS(SVG, "polyline");
      line.setAttribute("class", k);
      svg.appendChild(line);
    }
    line.setAttribute("points", rows.map((m, j) => PLOT.left + j * step + "," + (y(m[k]) - i)).join(" "));
  });
  let title = svg.querySelector(":scope > title");
  if (!title) title = svg.appendChild(document.createElementNS(SVG, "title"));
  const total = (k) => rows.reduce((s, m) => s + m[k], 0);
  setText(title, what + ": " + KINDS.map((k) => total(k) + " " + k).join(", "));
  svg.dataset.totals = JSON.stringify(Object.fromEntries(KINDS.map((k) => [k, total(k)])));
}

function fillProcesses(d) {
  setText($("#process-count"), String(d.processes.length));
  // A process's worker and scheduler share its id: the kind tells their rows apart.
  sync($("#processes tbody"), d.processes, (p) => p.kind + " " + p.id, (row, p) => {
    const c = cells(row, 7, ["", "", "", "n", "", "", ""]);
    [p.kind, p.id, p.host, String(p.pid), p.version, timed(p.started_ms, d.now_ms), timed(Math.min(p.beat_ms, d.now_ms), d.now_ms)]
      .forEach((v, i) => put(c[i], v));
  });
}
