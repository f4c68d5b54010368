// A queue's recurring schedules in its view (api/queues/NAME/schedules, a page at a time):
// when each recurs, its next and last occurrence, paused or not, its missed policy and value,
// and its actions (pause or resume, trigger now, remove after asking), gated by the page's
// role like every write (access.js). Loaded after app.js and overview.js: it adds itself to
// `more.detail`.
"use strict";
const schedulesView = { offset: 0, limit: 50, total: 0 };
CONFIRM.remove = "Remove the schedule {h} of {q}? It stops recurring and cannot be brought back (the entries it offered stay).";

const showQueueDetail = more.detail;
more.detail = (name) => {
  showQueueDetail(name);
  if (name !== schedulesView.name) Object.assign(schedulesView, { name, offset: 0 });
  const url = "api/queues/" + encodeURIComponent(name) + "/schedules?offset=" + schedulesView.offset +
    "&limit=" + schedulesView.limit;
  getJson(url).then((d) => { if (name === view.selected) fillSchedules(d); }, (err) => {
    if (name !== view.selected) return;
    $("#schedules-section").hidden = false;
    setText($("#schedule-count"), "cannot read: " + err.message);
  });
};

// An interval in the largest unit that divides it: "every 1 h", "every 90 s".
const UNITS = [[86400000, "d"], [3600000, "h"], [60000, "min"], [1000, "s"], [1, "ms"]];
function recurrence(s) {
  if (s.cron !== undefined) return "cron " + s.cron + " (" + s.zone + ")";
  const [size, unit] = UNITS.find(([size]) => s.every_ms % size === 0);
  return "every " + s.every_ms / size + " " + unit;
}

function fillSchedules(d) {
  schedulesView.total = d.total;
  setText($("#schedule-count"), String(d.total));
  // No schedules: no empty table (the section shows once one is added).
  $("#schedules-section").hidden = d.total === 0 && d.offset === 0;
  const shown = d.schedules.length;
  setText($("#schedule-page"), shown ? (d.offset + 1) + "–" + (d.offset + shown) + " of " + d.total : "none");
  $("#schedule-prev").disabled = d.offset === 0;
  $("#schedule-next").disabled = d.offset + shown >= d.total;
  sync($("#schedules tbody"), d.schedules, (s) => s.id, (row, s, fresh) => {
    const c = cells(row, 8, ["", "", "next", "last", "state", "", "v", "act"]);
    setText(c[0], s.id);
    row.classList.toggle("error", s.error !== undefined);
    if (s.error !== undefined) {
      setText(c[1], "cannot read: " + s.error);
      for (const i of [2, 3, 5, 6]) setText(c[i], "-");
      setText(c[4], "error");
      if (fresh) scheduleButtons(c[7], row);
      return;
    }
    setText(c[1], recurrence(s));
    put(c[2], s.paused ? "-" : s.next_ms === null ? "ended" : timed(s.next_ms, d.now_ms));
    put(c[3], s.last_ms === null ? "never" : timed(s.last_ms, d.now_ms));
    setText(c[4], s.paused ? "paused" : "active");
    setText(c[5], s.missed);
    setText(c[6], preview(s.value));
    row.classList.toggle("paused", s.paused);
    if (fresh) scheduleButtons(c[7], row);
    const pause = c[7].querySelector("[data-entry=pause]");
    const resume = c[7].querySelector("[data-entry=resume]");
    pause.hidden = s.paused;
    resume.hidden = !s.paused;
  });
}

// A row's buttons, made once; each acts on the schedule the row shows (rows are reused).
function scheduleButtons(td, row) {
  for (const [action, label] of [["pause", "Pause"], ["resume", "Resume"], ["trigger", "Trigger now"], ["remove", "Remove"]]) {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = label;
    b.dataset.entry = action;
    b.classList.toggle("danger", DESTRUCTIVE.includes(action));
    b.onclick = () => {
      const id = row.dataset.key;
      const run = () => actOnItem("schedules/" + encodeURIComponent(id), action, "schedule " + id);
      if (CONFIRM[action]) ask(action, run, id); else run();
    };
    td.appendChild(b);
    gate(b);
  }
}

$("#schedule-prev").onclick = () => {
  schedulesView.offset = Math.max(0, schedulesView.offset - schedulesView.limit);
  refresh();
};
$("#schedule-next").onclick = () => { schedulesView.offset += schedulesView.limit; refresh(); };
