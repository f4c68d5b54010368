// The gateway's messages (gateway.rs): a gateway queue's rows and entries decoded (method,
// destination, message id, labels, queue or flow-control key, the body's start; a dead
// letter's last answer), and the gateway page (#/gateway): each gateway's QStash queues,
// flow-control lanes, schedules and dead letters, read from api/gateway every 2 s while shown.
// Loaded after app.js and search.js.
"use strict";
const gatewayView = { on: false, timer: null };

// A message's body as the rows show it: its start, and its length when cut.
function bodyText(m) {
  const text = m.body ?? (m.bodyHex !== undefined ? "hex " + m.bodyHex : "");
  return m.bodyCut ? text + " … (" + m.bodyLength + " bytes)" : text;
}

// A row's Value cell for a gateway message.
window.messageText = (x) => {
  const m = x.message;
  if (m.cut) return "gateway message of " + m.envelopeLength + " bytes: open the entry to read it";
  const where = [m.queueName && "queue " + m.queueName, m.flowControlKey && "key " + m.flowControlKey,
    m.labels && "labels " + m.labels.join(","), m.scheduleId && "schedule " + m.scheduleId].filter(Boolean);
  const tried = x.attempts ? " · attempts " + x.attempts : "";
  let text = m.method + " " + m.url + " · " + m.messageId + tried + (where.length ? " · " + where.join(" · ") : "") +
    " · body: " + bodyText(m);
  if (x.response) text += " · last answer " + x.response.responseStatus + ": " + x.response.responseBody;
  return text;
};

// The entry's detail: the message's fields, each a term of #job-message.
window.showMessage = (j) => {
  const box = $("#job-message");
  const m = j.message;
  box.hidden = !m || !!m.cut;
  if (box.hidden) return box.replaceChildren();
  const r = j.response || {};
  const header = (h) => Object.entries(h || {}).map(([k, v]) => k + ": " + v.join(", ")).join("\n");
  const fields = [["Method", m.method], ["URL", m.url], ["Message id", m.messageId],
    ["Attempts", j.attempts ?? j.attempt], ["Retries", m.maxRetries], ["Labels", m.labels && m.labels.join(", ")],
    ["QStash queue", m.queueName], ["Flow-control key", m.flowControlKey], ["Schedule", m.scheduleId],
    ["Callback", m.callback], ["Headers", header(m.header)], ["Body", bodyText(m)], ["Body length", m.bodyLength],
    ["Response status", r.responseStatus], ["Response body", r.responseBody], ["Error", j.error]];
  box.replaceChildren(...fields.filter(([, v]) => v !== undefined && v !== null && v !== "").flatMap(([k, v]) => [
    Object.assign(document.createElement("dt"), { textContent: k }),
    Object.assign(document.createElement("dd"), { textContent: String(v), className: "msg-" + k.toLowerCase().replace(/ /g, "-") })]));
};

// Shows the gateway page instead of the overview (on), or hides it.
window.showGateway = (on) => {
  gatewayView.on = on;
  if (on) for (const id of ["#overview", "#overview-nav"]) $(id).hidden = true;
  $("#gateway").hidden = !on;
  $("#to-gateway").classList.toggle("here", on);
  if (on) $("#to-queues").classList.remove("here");
  clearInterval(gatewayView.timer);
  if (on) { readGateway(); gatewayView.timer = setInterval(readGateway, 2000); }
};

// A table with `heads` and a row per item; cells are text or [text, href].
function gatewayTable(id, heads, rows) {
  const table = Object.assign(document.createElement("table"), { id });
  const head = table.createTHead().insertRow();
  for (const h of heads) head.appendChild(Object.assign(document.createElement("th"), { textContent: h }));
  const body = table.createTBody();
  for (const row of rows) {
    const tr = body.insertRow();
    for (const v of row) {
      const td = tr.insertCell();
      if (v && typeof v === "object" && !Array.isArray(v)) put(td, v);
      else if (Array.isArray(v)) td.appendChild(Object.assign(document.createElement("a"), { textContent: v[0], href: v[1] }));
      else td.textContent = v === null || v === undefined ? "-" : String(v);
    }
  }
  const box = Object.assign(document.createElement("div"), { className: "scroll" });
  box.appendChild(table);
  return box;
}

const queueHref = (name, tab) => "#/queue/" + encodeURIComponent(name) + "/" + (tab || "pending");

function gatewaySection(g, now) {
  const el = (tag, text) => Object.assign(document.createElement(tag), { textContent: text });
  const part = document.createElement("section");
  part.className = "gateway";
  part.dataset.gateway = g.name;
  const h = el("h3", "Gateway queue ");
  h.appendChild(Object.assign(document.createElement("a"), { textContent: g.name, href: queueHref(g.name) }));
  const dlq = el("p", "");
  dlq.append("Dead letters (DLQ): ", Object.assign(document.createElement("a"),
    { className: "dlq", textContent: String(g.dlq), href: queueHref(g.name, "dead") }));
  dlq.append(" · pending " + g.queue.pending + " · ready " + g.queue.ready + " · in flight " + g.queue.in_flight);
  const queues = gatewayTable("gw-queues-" + g.name, ["QStash queue", "Parallelism", "Paused", "Lag", "In flight", "Dead"],
    g.queues.map((q) => [[q.name, queueHref(q.lane)], q.parallelism ?? 1, q.paused ? "paused" : "no", q.lag, q.inFlight, [String(q.dead), queueHref(q.lane, "dead")]]));
  const flows = gatewayTable("gw-flows-" + g.name, ["Flow-control lane", "Parallelism", "Rate", "Period (s)", "Lag", "Dead"],
    g.flowControl.map((f) => [[f.lane, queueHref(f.lane)], f.parallelism, f.rate, f.period, f.lag, f.dead]));
  const schedules = gatewayTable("gw-schedules-" + g.name, ["Schedule", "Cron", "Destination", "Method", "Paused", "Next"],
    g.schedules.shown.map((s) => [[s.scheduleId, "#/queue/" + encodeURIComponent(g.name) + "/pending"], s.cron,
      s.destination, s.method, s.isPaused ? "paused" : "no", s.isPaused ? "-" : timed(s.nextMs, now)]));
  const lanesNote = g.lanesShown < g.lanes ? el("p", "Lanes shown: " + g.lanesShown + " of " + g.lanes) : "";
  part.append(h, dlq, el("h4", "QStash queues (" + g.queues.length + ")"), queues, lanesNote,
    el("h4", "Flow-control lanes (" + g.flowControl.length + ")"), flows,
    el("h4", "Schedules (" + g.schedules.total + ")"), schedules);
  return part;
}

async function readGateway() {
  let d;
  try {
    d = await getJson("api/gateway");
  } catch (err) {
    setText($("#updated"), "cannot read: " + err.message);
    $("#updated").className = "error";
    return;
  }
  if (!gatewayView.on) return;
  setText($("#updated"), "updated " + new Date(d.now_ms).toLocaleTimeString());
  $("#updated").className = "";
  $("#no-gateway").hidden = d.gateways.length > 0;
  $("#gateway-list").replaceChildren(...d.gateways.map((g) => gatewaySection(g, d.now_ms)));
}

// app.js read the address before this file was loaded.
if (view.gateway) window.showGateway(true);
