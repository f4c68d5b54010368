// The delayq dashboard: reads /api/queues every 2 s; writes send the token as a Bearer header.
"use strict";
let selected = null;
const $ = (sel) => document.querySelector(sel);

function cell(row, text, cls) {
  const td = row.insertCell();
  td.textContent = text;
  if (cls) td.className = cls;
  return td;
}
function when(ms, now) {
  if (ms === null || ms === undefined) return "-";
  const s = Math.round((ms - now) / 1000);
  return s >= 0 ? "in " + s + " s" : Math.abs(s) + " s ago";
}
function status(text, error) {
  $("#status").textContent = text;
  $("#status").className = error ? "error" : "";
}
async function getJson(url) {
  const res = await fetch(url);
  const body = await res.json();
  if (!res.ok) throw new Error(body.error || res.status);
  return body;
}

async function refresh() {
  try {
    const data = await getJson("/api/queues");
    $("#mode").textContent = (data.writes ? "writes allowed" : "read-only") + " · codec " + data.codec;
    const body = $("#queues tbody");
    body.replaceChildren();
    for (const q of data.queues) {
      const row = body.insertRow();
      row.dataset.queue = q.name;
      if (q.stuck) row.classList.add("stuck");
      if (q.paused) row.classList.add("paused");
      cell(row, q.name);
      for (const k of ["pending", "ready", "in_flight", "dead", "quarantined"]) {
        cell(row, String(q[k]), "n " + k);
      }
      cell(row, when(q.next_due_ms, data.now_ms));
      cell(row, q.overdue_ms > 0 ? Math.round(q.overdue_ms / 1000) + " s" : "-");
      cell(row, q.paused ? "paused" : q.stuck ? "STUCK: overdue, no transfer seen" : "ok", "state");
      row.onclick = () => { selected = q.name; showDetail(); };
    }
    status("updated " + new Date(data.now_ms).toLocaleTimeString(), false);
    if (selected) await showDetail();
  } catch (err) {
    status("cannot read: " + err.message, true);
  }
}

function drawChart(chart) {
  const svg = $("#chart");
  svg.replaceChildren();
  const max = Math.max(1, ...chart.counts);
  const w = 720 / chart.counts.length;
  chart.counts.forEach((n, i) => {
    const h = Math.round((n / max) * 120);
    const r = document.createElementNS("http://www.w3.org/2000/svg", "rect");
    r.setAttribute("x", i * w + 1);
    r.setAttribute("y", 130 - h);
    r.setAttribute("width", w - 2);
    r.setAttribute("height", h);
    const t = document.createElementNS("http://www.w3.org/2000/svg", "title");
    t.textContent = "+" + i + " min: " + n;
    r.appendChild(t);
    svg.appendChild(r);
  });
  $("#overdue").textContent = String(chart.overdue);
}

function fill(sel, rows, columns) {
  const body = $(sel + " tbody");
  body.replaceChildren();
  for (const r of rows) {
    const row = body.insertRow();
    columns.forEach(([f, cls]) => cell(row, f(r), cls));
  }
}

async function showDetail() {
  const d = await getJson("/api/queues/" + encodeURIComponent(selected));
  $("#detail").hidden = false;
  $("#detail-name").textContent = selected;
  drawChart(d.chart);
  fill("#pending", d.pending, [[(p) => when(p.due_ms, d.now_ms)], [(p) => p.value, "v"]]);
  fill("#dead", d.dead, [[(x) => String(x.attempts), "n"], [(x) => x.error],
    [(x) => new Date(x.dead_at_ms).toISOString()], [(x) => x.value, "v"]]);
  fill("#quarantine", d.quarantine, [[(x) => String(x.len), "n"], [(x) => x.hex, "v"]]);
}

async function act(action) {
  const res = await fetch("/api/queues/" + encodeURIComponent(selected) + "/" + action, {
    method: "POST",
    headers: { Authorization: "Bearer " + $("#token").value },
  });
  const body = await res.json();
  if (!res.ok) status(action + " refused (" + res.status + "): " + body.error, true);
  else status(action + ": " + JSON.stringify(body), false);
  await refresh();
  if (!res.ok) status(action + " refused (" + res.status + "): " + body.error, true);
}

for (const b of document.querySelectorAll(".actions button")) {
  b.onclick = () => act(b.dataset.action);
}
refresh();
setInterval(refresh, 2000);
