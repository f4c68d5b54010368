// The delayq dashboard: reads a page of api/queues (relative: the page may sit under a base path) every 2 s and updates the tables in place
// (a selection or a message survives a refresh); writes send the token as a Bearer header
// (access.js: the page's role, and which buttons it may use) and the ones that lose or move
// values ask first. The selected queue is in the URL: #/queue/NAME/TAB (and an entry opened in
// it: #/queue/NAME/TAB/ITEM; search.js draws the entry, the search and the bulk actions); the
// workers page is #/workers (workers.js), the gateway's #/gateway (gateway.js).
"use strict";
const $ = (sel) => document.querySelector(sel);
const COUNTS = ["pending", "ready", "in_flight", "dead", "quarantined"];
// A queue's health states (health.rs), worst first; "ok" has no class.
const HEALTH = ["unreadable", "stuck", "failing", "lagging", "paused"];
const view = { workers: false, gateway: false, selected: null, offset: 0, limit: 100, filter: "", order: "name", tab: "pending", from: 0, q: "", job: null };
// What the parts loaded after this file fill in (overview.js): more parameters of the
// overview's request, a look at its answer, more cells of a queue's row, more of the queue view.
const more = { query: () => "", page: () => {}, cells: () => [], detail: () => {} };
const CONFIRM = {
  replay: "Replay every dead letter of {q} onto its list?",
  "purge-dead": "Delete every dead letter of {q}? They cannot be brought back.",
  "purge-quarantine": "Delete every quarantined entry of {q}? They cannot be brought back.",
  cancel: "Cancel the pending entry {h} of {q}? It is removed, not run.",
  delete: "Delete the dead letter {h} of {q}? It cannot be brought back.",
  "give-back": "Give the value of delivery {h} of {q} back to the list? If its consumer still works on it, it may be processed twice.",
};

// The actions that lose values: their buttons are red.
const DESTRUCTIVE = ["purge-dead", "purge-quarantine", "cancel", "delete", "remove", "clear-limits"];
// Sets a node's text only when it changed: replacing equal text would drop a selection in it.
function setText(node, text) {
  if (node.textContent !== text) node.textContent = text;
}
// A span of time as people say it, in its two largest units: "12 s", "25 min", "17 h 41 min"
// (the words of the server's reasons, health.rs).
function span(ms) {
  const units = [[86400, "d"], [3600, "h"], [60, "min"], [1, "s"]];
  let s = Math.max(0, Math.floor(ms / 1000));
  const parts = [];
  for (const [size, unit] of units) {
    if (s >= size || (!parts.length && size === 1)) { parts.push(Math.floor(s / size) + " " + unit); s %= size; }
    if (parts.length === 2 || (parts.length && s === 0)) break;
  }
  return parts.join(" ");
}
// The time `ms` (epoch) as the page shows every time: relative to `now` as people say it ("in
// 17 h 41 min", "29 min ago") and the absolute time (ISO, UTC) as its title, shown on hover.
function timed(ms, now) {
  if (ms === null || ms === undefined) return { text: "-", title: "" };
  const d = ms - now;
  const text = Math.abs(d) < 1000 ? "now" : d > 0 ? "in " + span(d) : span(-d) + " ago";
  return { text, title: new Date(ms).toISOString() };
}
// Shows `v` in `node`: a text, or `timed`'s text with its title.
function put(node, v) {
  const { text, title } = v !== null && typeof v === "object" ? v : { text: String(v), title: "" };
  setText(node, text);
  if (node.title !== title) node.title = title;
}
// The outcome of the last action; it stays until the next one (refreshes do not touch it).
function status(text, error) {
  setText($("#status"), text);
  $("#status").className = error ? "error" : "";
}
// The Authorization header of a request: only with a token typed in, so that a proxy's own
// login (basic auth) still reaches it.
function authHeaders() {
  const token = $("#token").value.trim();
  return token ? { Authorization: "Bearer " + token } : {};
}
// The headers of a write: the token, and the header that shows the server this page sent it
// (a form of another site cannot send it).
function writeHeaders() {
  return { ...authHeaders(), "X-Delayq-Write": "1" };
}

async function getJson(url) {
  const res = await fetch(url, { headers: authHeaders() });
  const body = await res.json();
  if (!res.ok) throw Object.assign(new Error(body.error || res.status), { status: res.status });
  return body;
}

// Makes `body` hold one row per item, keyed by `key(item)`, in order; `draw(row, item, fresh)`
// fills a row (creating its cells when fresh) and reuses the rows already there.
function sync(body, items, key, draw) {
  const existing = new Map([...body.rows].map((r) => [r.dataset.key, r]));
  let at = 0;
  for (const item of items) {
    const k = key(item);
    let row = existing.get(k);
    const fresh = !row;
    if (fresh) { row = document.createElement("tr"); row.dataset.key = k; }
    existing.delete(k);
    if (body.rows[at] !== row) body.insertBefore(row, body.rows[at] || null);
    draw(row, item, fresh);
    at++;
  }
  for (const row of existing.values()) row.remove();
}
function cells(row, n, classes) {
  while (row.cells.length < n) row.insertCell();
  while (row.cells.length > n) row.deleteCell(-1);
  (classes || []).forEach((c, i) => { if (c && row.cells[i].className !== c) row.cells[i].className = c; });
  return row.cells;
}

// A queue's state in words: a problem in capitals with its reason ("FAILING: 20 dead, 0 acked
// in 5 min"), else "paused" or "ok".
function stateText(health) {
  return health.reason ? health.state.toUpperCase() + ": " + health.reason : health.state;
}
// The queue's name as a link to its view (middle-click, keyboard), made once per row.
function nameLink(td, name) {
  let a = td.querySelector("a");
  if (!a) { a = document.createElement("a"); td.replaceChildren(a); }
  const href = "#/queue/" + encodeURIComponent(name);
  if (a.getAttribute("href") !== href) a.setAttribute("href", href);
  setText(a, name);
}
function drawQueue(now) {
  return (row, q, fresh) => {
    row.dataset.queue = q.name;
    // A click on the row opens the queue; one on its link, the link does (through the address).
    if (fresh) row.onclick = (e) => { if (!e.target.closest("a")) select(q.name); };
    const health = q.health || { state: q.error ? "unreadable" : "ok", reason: "" };
    for (const s of HEALTH) row.classList.toggle(s, s === health.state);
    row.classList.toggle("failed", !!q.error);
    if (q.error) {
      const c = cells(row, 3 + more.cells(q).length, ["", "error", "state"]);
      c[1].colSpan = 8;
      nameLink(c[0], q.name);
      setText(c[1], q.error);
      setText(c[2], "UNREADABLE");
      return;
    }
    const extra = more.cells(q);
    const c = cells(row, 10 + extra.length, ["", ...COUNTS.map((k) => "n " + k), "t", "t", "n lag", "state"]);
    extra.forEach((text, i) => setText(c[10 + i], text));
    c[1].colSpan = 1;
    nameLink(c[0], q.name);
    COUNTS.forEach((k, i) => setText(c[i + 1], String(q[k])));
    put(c[6], timed(q.next_due_ms, now));
    put(c[7], q.overdue_ms > 0 ? { text: span(q.overdue_ms), title: "due at " + new Date(now - q.overdue_ms).toISOString() } : "-");
    put(c[8], q.ready_age_ms != null ? { text: span(q.ready_age_ms), title: "values waiting since about " + new Date(now - q.ready_age_ms).toISOString() } : "-");
    setText(c[9], stateText(health));
  };
}

async function refresh() {
  // The workers and gateway pages read their own (workers.js, gateway.js); the overview waits
  // until it is shown again.
  if (view.workers || view.gateway) return;
  try {
    const url = "api/queues?offset=" + view.offset + "&limit=" + view.limit +
      "&q=" + encodeURIComponent(view.filter) + "&sort=" + view.order + more.query();
    const data = await getJson(url);
    view.writes = data.writes;
    setText($("#mode"), "role " + (view.role || "read-only") + " · default codec " + data.codec);
    more.page(data);
    sync($("#queues tbody"), data.queues, (q) => q.name, drawQueue(data.now_ms));
    const last = Math.min(data.offset + data.queues.length, data.total);
    setText($("#page"), (data.total ? data.offset + 1 : 0) + "–" + last + " of " + data.total + " queues");
    $("#prev").disabled = data.offset === 0;
    $("#next").disabled = last >= data.total;
    setText($("#updated"), "updated " + new Date(data.now_ms).toLocaleTimeString());
    $("#updated").className = "";
    if (view.selected) await showDetail();
  } catch (err) {
    setText($("#updated"), "cannot read: " + err.message);
    $("#updated").className = "error";
  }
}

// The plot area of a chart (viewBox 0 0 760 160): the y axis's labels left of it, the x axis's
// under it.
const PLOT = { left: 40, width: 720, top: 10, height: 120 };
// A group of `svg` by its class, made once.
function group(svg, cls) {
  let g = svg.querySelector("g." + cls);
  if (!g) {
    g = svg.appendChild(document.createElementNS("http://www.w3.org/2000/svg", "g"));
    g.setAttribute("class", cls);
  }
  return g;
}
// A chart's axes: y from 0 to `max` (both written), x with `ticks` ([fraction across, text]).
function axes(svg, max, ticks) {
  const make = (tag, attrs, text) => {
    const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const { left, width, top, height } = PLOT;
  const bottom = top + height;
  const g = group(svg, "axes");
  if (g.dataset.drawn === max + "|" + JSON.stringify(ticks)) return;
  g.dataset.drawn = max + "|" + JSON.stringify(ticks);
  g.replaceChildren(
    make("line", { class: "axis", x1: left, y1: top, x2: left, y2: bottom }),
    make("line", { class: "axis", x1: left, y1: bottom, x2: left + width, y2: bottom }),
    make("text", { x: left - 4, y: top + 4, "text-anchor": "end", class: "y-max" }, String(max)),
    make("text", { x: left - 4, y: bottom, "text-anchor": "end" }, "0"),
    ...ticks.map(([f, text]) => make("text", { x: left + f * width, y: bottom + 16, "text-anchor": f === 0 ? "start" : f === 1 ? "end" : "middle" }, text)));
}

function drawChart(chart) {
  const svg = $("#chart");
  const max = Math.max(1, ...chart.counts);
  const w = PLOT.width / chart.counts.length;
  axes(svg, max, [[0, "now"], [0.5, "+30 min"], [1, "+60 min"]]);
  const bars = group(svg, "bars");
  while (bars.children.length > chart.counts.length) bars.lastChild.remove();
  chart.counts.forEach((n, i) => {
    let r = bars.children[i];
    if (!r) {
      r = document.createElementNS("http://www.w3.org/2000/svg", "rect");
      r.appendChild(document.createElementNS("http://www.w3.org/2000/svg", "title"));
      bars.appendChild(r);
    }
    const h = Math.round((n / max) * PLOT.height);
    r.setAttribute("x", PLOT.left + i * w + 1);
    r.setAttribute("y", PLOT.top + PLOT.height - h);
    r.setAttribute("width", w - 2);
    r.setAttribute("height", h);
    setText(r.firstChild, "+" + i + " min: " + n);
  });
  setText($("#overdue"), String(chart.overdue));
}

// A dead letter's error in its row: a long one (a command's stderr) as its start and its end,
// the whole of it in the entry's detail.
function shortError(error) {
  return error.length <= 400 ? error : error.slice(0, 120) + " … " + error.slice(-280);
}
function preview(x) {
  // A gateway's message (gateway.js): decoded, never its envelope's bytes.
  if (x.message && window.messageText) return window.messageText(x);
  const text = x.value ?? x.hex;
  return (x.cut ? text + " … (" + x.len + " bytes)" : text) + codecNote(x);
}
// Each tab of the detail: its columns (heading, text of a row, cell class) and a row's key.
const TABS = {
  pending: { key: (x) => x.handle || "at " + x.at, columns: [
    ["Due", (x) => timed(x.due_ms, x.now)], ["Handle", (x) => x.handle || x.error || ""],
    ["Value", preview, "v"], ["", null, "act"]] },
  ready: { key: (x) => "at " + x.at, columns: [["#", (x) => String(x.at + 1), "n"], ["Value", preview, "v"]] },
  in_flight: { key: (x) => x.id, columns: [["Deadline", (x) => timed(x.deadline_ms, x.now)],
    ["Delivery", (x) => x.id], ["Process", (x) => x.process || "-"], ["Attempt", (x) => x.attempt == null ? "-" : String(x.attempt), "n"],
    ["Started", (x) => timed(x.started_ms, x.now), "t"], ["Value", (x) => x.error || preview(x), "v"], ["", null, "act"]] },
  dead: { key: (x) => x.id || "at " + x.at, columns: [["Attempts", (x) => x.malformed ? "-" : String(x.attempts), "n"],
    ["Error", (x) => x.malformed || shortError(x.error), "err"], ["Dead at", (x) => x.malformed ? "-" : timed(x.dead_at_ms, x.now)],
    ["Value", preview, "v"], ["", null, "act"]] },
  quarantine: { key: (x) => "at " + x.at, columns: [["Bytes", (x) => String(x.len), "n"], ["Hex (start)", (x) => x.hex, "v"]] },
};

// The buttons of a row of the pending or dead tab, made once per row; each acts on the item
// the row shows (read from the row when clicked: rows are reused).
const ITEM_ACTIONS = {
  pending: [["run-now", "Run now"], ["cancel", "Cancel"]],
  dead: [["retry", "Retry"], ["delete", "Delete"]],
  in_flight: [["give-back", "Give back"]],
};
function itemButtons(td, row, tab) {
  for (const [action, label] of ITEM_ACTIONS[tab]) {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = label;
    b.dataset.entry = action;
    b.classList.toggle("danger", DESTRUCTIVE.includes(action));
    b.onclick = (e) => {
      e.stopPropagation();
      const item = encodeURIComponent(row.dataset.key);
      const path = tab === "dead" ? "dead/" + row.dataset.at + "/" + item : tab + "/" + item;
      const run = () => actOnItem(path, action, row.dataset.key);
      if (CONFIRM[action]) ask(action, run, row.dataset.key); else run();
    };
    td.appendChild(b);
  }
}

// The open tab's page of rows, updated in place.
function fillList(d) {
  const tab = TABS[d.tab];
  const head = $("#list thead tr");
  const headings = tab.columns.map(([h]) => h);
  if (head.dataset.tab !== d.tab) {
    head.replaceChildren(...headings.map((h) => Object.assign(document.createElement("th"), { textContent: h })));
    head.dataset.tab = d.tab;
    $("#list tbody").replaceChildren();
  }
  const items = d.rows.map((r, i) => Object.assign({ at: d.from + i, now: d.now_ms }, r));
  sync($("#list tbody"), items, tab.key, (row, x) => {
    const c = cells(row, tab.columns.length, tab.columns.map(([, , cls]) => cls));
    tab.columns.forEach(([, f], i) => { if (f) put(c[i], f(x)); });
    row.dataset.at = String(x.at);
    // An item the actions can name: a pending entry's handle, a dead letter's id (not for a
    // record delayq did not write), a delivery whose value is still there.
    const named = d.tab === "pending" ? x.handle : d.tab === "in_flight" ? x.id && !x.error : x.id;
    // Made once per row, when the overview has said writes are allowed (a deep link's first
    // detail can come before it).
    const bare = !c[c.length - 1].querySelector("button");
    if (bare && ITEM_ACTIONS[d.tab] && named && d.writes) itemButtons(c[c.length - 1], row, d.tab);
  });
  for (const b of document.querySelectorAll(".tabs button")) {
    b.setAttribute("aria-selected", b.dataset.tab === d.tab);
    if (d.counts) setText(b.querySelector(".count"), " (" + d.counts[b.dataset.tab] + ")");
  }
  setText($("#list-page"), d.rows.length ? "from " + (d.from + 1) + " to " + (d.from + d.rows.length) : "none from " + (d.from + 1));
  $("#list-prev").disabled = d.from === 0;
  $("#list-next").disabled = d.rows.length < d.page;
  if (window.listDrawn) window.listDrawn(d);
}

async function showDetail() {
  const name = view.selected;
  let d;
  try {
    d = await getJson("api/queues/" + encodeURIComponent(name) + "?tab=" + view.tab + "&from=" + view.from +
      (view.q ? "&q=" + encodeURIComponent(view.q) : ""));
  } catch (err) {
    if (name !== view.selected) return;
    $("#detail").hidden = false;
    setText($("#detail-name"), name);
    setText($("#detail-error"), err.status === 404 ? "no such queue: " + err.message : "cannot read: " + err.message);
    $("#detail-body").hidden = true;
    return;
  }
  if (name !== view.selected || d.tab !== view.tab) return;
  d.writes = view.writes;
  $("#detail").hidden = false;
  $("#detail-body").hidden = false;
  setText($("#detail-error"), "");
  setText($("#detail-name"), name);
  showQueueCodec(d);
  // One of Pause and Resume, by the queue's state.
  $('button[data-action="pause"]').hidden = !!d.queue.paused;
  $('button[data-action="resume"]').hidden = !d.queue.paused;
  drawChart(d.chart);
  d.counts = { ...d.queue, quarantine: d.queue.quarantined };
  fillList(d);
  more.detail(name);
}

// Shows the queue `name` (none: null) at its tab `tab`, with its entry `job` open (none: null);
// the address says which.
function select(name, tab, job) {
  if (name !== view.selected || (tab && tab !== view.tab)) view.from = 0;
  view.selected = name;
  view.tab = TABS[tab] ? tab : view.tab;
  view.job = job || null;
  const hash = name ? "#/queue/" + encodeURIComponent(name) + "/" + view.tab +
    (view.job ? "/" + encodeURIComponent(view.job) : "") : "";
  if (location.hash !== hash) history.replaceState(null, "", hash || location.pathname);
  if (name) showDetail(); else $("#detail").hidden = true;
  if (window.showJob) window.showJob();
}
function fromHash() {
  // The workers page (workers.js) shows instead of the overview and a queue.
  const workers = location.hash === "#/workers";
  // The gateway page (gateway.js) shows instead of them too.
  const gateway = location.hash === "#/gateway";
  view.workers = workers;
  view.gateway = gateway;
  if (window.showWorkers) window.showWorkers(workers);
  if (window.showGateway) window.showGateway(gateway);
  if (workers || gateway) { view.selected = null; $("#detail").hidden = true; return; }
  const m = location.hash.match(/^#\/queue\/([^/]+)(?:\/(\w+))?(?:\/([^/]+))?$/);
  if (m) select(decodeURIComponent(m[1]), m[2], m[3] && decodeURIComponent(m[3])); else select(null);
}

async function act(action) {
  const res = await fetch("api/queues/" + encodeURIComponent(view.selected) + "/" + action, {
    method: "POST",
    headers: writeHeaders(),
  });
  const body = await res.json();
  if (!res.ok) status(action + " refused (" + res.status + "): " + body.error, true);
  else status(action + ": " + JSON.stringify(body), false);
  await refresh();
}

async function actOnItem(path, action, item) {
  const url = "api/queues/" + encodeURIComponent(view.selected) + "/" + path + "/" + action;
  const res = await fetch(url, { method: "POST", headers: writeHeaders() });
  const body = await res.json();
  if (!res.ok) status(action + " " + item + " refused (" + res.status + "): " + body.error, true);
  else status(action + " " + item + ": done", false);
  await refresh();
}

// Asks before `run` does `action`; the question names the queue (and the entry `handle`).
function ask(action, run, handle) {
  const dialog = $("#confirm");
  setText($("#confirm-text"), CONFIRM[action].replace("{q}", view.selected).replace("{h}", handle || ""));
  $("#confirm-yes").onclick = () => { dialog.close(); run(); };
  $("#confirm-no").onclick = () => { dialog.close(); status(action + ": cancelled", false); };
  dialog.showModal();
}

for (const b of document.querySelectorAll(".actions button")) {
  const action = b.dataset.action;
  b.onclick = () => (CONFIRM[action] ? ask(action, () => act(action)) : act(action));
}
$("#prev").onclick = () => { view.offset = Math.max(0, view.offset - view.limit); refresh(); };
$("#next").onclick = () => { view.offset += view.limit; refresh(); };
$("#order").onchange = () => { view.order = $("#order").value; view.offset = 0; refresh(); };
$("#filter").oninput = () => { view.filter = $("#filter").value; view.offset = 0; refresh(); };
for (const b of document.querySelectorAll(".tabs button")) {
  b.onclick = () => select(view.selected, b.dataset.tab);
}
$("#list-prev").onclick = () => { view.from = Math.max(0, view.from - 50); showDetail(); };
$("#list-next").onclick = () => { view.from += 50; showDetail(); };
window.addEventListener("hashchange", fromHash);
fromHash();
refresh();
setInterval(refresh, 2000);
