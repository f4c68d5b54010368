// The workers page (#/workers): every live delayq process with the queues it serves, and the
// deliveries each holds in flight (process, queue, attempt, start, running time, deadline), read
// from api/workers every 2 s while the page is shown. Loaded after app.js.
"use strict";
const workersView = { on: false, timer: null };

// Shows the workers page instead of the overview (on), or the overview back.
window.showWorkers = (on) => {
  const was = workersView.on;
  workersView.on = on;
  for (const id of ["#overview", "#overview-nav"]) $(id).hidden = on;
  $("#workers").hidden = !on;
  $("#to-workers").classList.toggle("here", on);
  $("#to-queues").classList.toggle("here", !on);
  clearInterval(workersView.timer);
  if (on) { readWorkers(); workersView.timer = setInterval(readWorkers, 2000); } else if (was) refresh();
};

// A queue's name as a link to its view.
function queueLinks(td, names) {
  const want = names.join(" ");
  if (td.dataset.names === want) return;
  td.dataset.names = want;
  td.replaceChildren(...names.flatMap((name, i) => {
    const a = Object.assign(document.createElement("a"), { href: "#/queue/" + encodeURIComponent(name), textContent: name });
    return i ? [document.createTextNode(" "), a] : [a];
  }));
}

async function readWorkers() {
  let d;
  try {
    d = await getJson("api/workers");
  } catch (err) {
    setText($("#updated"), "cannot read: " + err.message);
    $("#updated").className = "error";
    return;
  }
  if (!workersView.on) return;
  setText($("#updated"), "updated " + new Date(d.now_ms).toLocaleTimeString());
  $("#updated").className = "";
  setText($("#worker-count"), String(d.processes.length));
  setText($("#per-queue"), String(d.per_queue));
  sync($("#worker-list tbody"), d.processes, (p) => p.id, (row, p) => {
    const c = cells(row, 9, ["", "", "", "n", "", "t", "t", "", "n"]);
    [p.id, p.kinds.join(", "), p.host, String(p.pid), p.version, timed(p.started_ms, d.now_ms),
      timed(Math.min(p.beat_ms, d.now_ms), d.now_ms)].forEach((v, i) => put(c[i], v));
    queueLinks(c[7], p.queues.length ? p.queues : p.patterns);
    setText(c[8], String(p.in_flight.length));
  });
  // Deliveries of live processes first, by process; then those whose process is not live.
  const rows = d.processes.flatMap((p) => p.in_flight).concat(d.unowned.map((x) => ({ ...x, gone: true })));
  setText($("#delivery-count"), String(rows.length));
  const left = d.queues.filter((q) => q.in_flight > q.shown).map((q) => q.name + ": " + q.shown + " of " + q.in_flight);
  setText($("#deliveries-left-out"), left.length ? "Only the nearest deadlines shown for " + left.join(", ") : "");
  sync($("#deliveries tbody"), rows, (x) => x.queue + " " + x.id, (row, x) => {
    const c = cells(row, 7, ["", "", "v", "n", "t", "t", "t"]);
    row.classList.toggle("gone", !!x.gone);
    put(c[0], x.process ? x.process + (x.gone ? " (not live)" : "") : "unknown (an id of the earlier form)");
    queueLinks(c[1], [x.queue]);
    put(c[2], x.id);
    put(c[3], x.attempt == null ? "-" : String(x.attempt));
    put(c[4], timed(x.started_ms, d.now_ms));
    put(c[5], x.running_ms == null ? "-" : span(x.running_ms));
    put(c[6], timed(x.deadline_ms, d.now_ms));
  });
}

// app.js read the address before this file was loaded.
if (view.workers) window.showWorkers(true);
