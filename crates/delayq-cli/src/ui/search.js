// The dashboard's search inside a tab, the detail of one entry and the actions on selected rows.
// Loaded after app.js, whose helpers ($, view, select, getJson, setText, when, ask, actOnItem,
// status, refresh, ITEM_ACTIONS, CONFIRM) it uses; app.js calls listDrawn after each page of the
// list and showJob when the address names an entry.
"use strict";

// A search reads at most a window of entries per request; "search further" carries on where the
// last one stopped (the server says where: `next`), "‹" goes back to where the one before began.
const searchBack = [];
let searchNext = null;

function startSearch() {
  view.q = $("#search").value;
  view.from = 0;
  searchBack.length = 0;
  showDetail();
}
function searchFurther() {
  if (searchNext === null) return;
  searchBack.push(view.from);
  view.from = searchNext;
  showDetail();
}
$("#search").addEventListener("change", startSearch);
$("#search").addEventListener("keydown", (e) => { if (e.key === "Enter") startSearch(); });
$("#search-further").onclick = searchFurther;
const pageNext = $("#list-next").onclick;
const pagePrev = $("#list-prev").onclick;
$("#list-next").onclick = () => (view.q ? searchFurther() : pageNext());
$("#list-prev").onclick = () => {
  if (!view.q) return pagePrev();
  view.from = searchBack.pop() || 0;
  showDetail();
};

// The entry a row shows, as the address and the job API name it: a handle, a delivery id or a
// dead letter's id (with the position it was read at, after "@"), or a position.
function rowItem(tab, row) {
  if (tab === "ready" || tab === "quarantine") return row.dataset.at;
  if (row.dataset.key.startsWith("at ")) return null;
  return tab === "in_flight" ? row.dataset.key : row.dataset.key + "@" + row.dataset.at;
}

// After each page of the list: the search's state, and each row opens its entry when clicked and
// (pending and dead letters, with writes) has a box to select it.
window.listDrawn = (d) => {
  const searching = d.q !== undefined;
  searchNext = searching ? d.next : null;
  $("#search-further").hidden = !searching;
  $("#search-further").disabled = d.next === null;
  if (searching) {
    const end = d.from + d.scanned;
    setText($("#search-info"), d.rows.length + " found among entries " + (d.from + 1) + "–" + end +
      (d.next === null ? " (the end)" : ""));
    setText($("#list-page"), "searched from " + (d.from + 1));
    $("#list-next").disabled = d.next === null;
    $("#list-prev").disabled = d.from === 0;
  } else {
    setText($("#search-info"), "");
  }
  const pickable = d.writes && (d.tab === "pending" || d.tab === "dead");
  for (const row of $("#list tbody").rows) {
    const item = rowItem(d.tab, row);
    row.classList.toggle("opened", !!item && item === view.job);
    if (item !== null && !row.onclick) row.onclick = () => select(view.selected, view.tab, rowItem(view.tab, row));
    if (pickable && item !== null && !row.querySelector("input.pick")) {
      const box = Object.assign(document.createElement("input"), { type: "checkbox", className: "pick" });
      box.setAttribute("aria-label", "select");
      box.onclick = (e) => { e.stopPropagation(); countPicked(); };
      row.cells[row.cells.length - 1].prepend(box);
    }
  }
  const head = $("#list thead tr").lastElementChild;
  if (pickable && head && !head.querySelector("input.pick-all")) {
    const all = Object.assign(document.createElement("input"), { type: "checkbox", className: "pick-all" });
    all.setAttribute("aria-label", "select every row shown");
    all.onclick = () => {
      for (const box of document.querySelectorAll("#list tbody input.pick")) box.checked = all.checked;
      countPicked();
    };
    head.prepend(all);
  }
  for (const b of document.querySelectorAll("#bulk button")) b.hidden = b.dataset.tab !== d.tab;
  countPicked();
};

function picked() {
  return [...document.querySelectorAll("#list tbody input.pick:checked")].map((box) => box.closest("tr"));
}
function countPicked() {
  const n = picked().length;
  setText($("#bulk-count"), n + " selected");
  for (const b of document.querySelectorAll("#bulk button")) b.disabled = n === 0;
  // The bar shows once a row is selected: no stray "0 selected" bar.
  $("#bulk").hidden = n === 0;
}

// The actions on the selected rows: one question naming how many, then each entry through its
// own endpoint, one after the other; the outcome of each is listed (one failing stops no other).
const BULK = {
  cancel: "Cancel the {n} selected pending entries of {q}? They are removed, not run.",
  retry: "Retry the {n} selected dead letters of {q} (back onto its list, fresh attempt counts)?",
  delete: "Delete the {n} selected dead letters of {q}? They cannot be brought back.",
};
for (const b of document.querySelectorAll("#bulk button")) {
  b.onclick = () => {
    const action = b.dataset.bulk;
    const tab = view.tab;
    const rows = picked();
    if (!rows.length) return;
    const items = rows.map((row) => ({
      name: row.dataset.key,
      path: tab === "dead" ? "dead/" + row.dataset.at + "/" + encodeURIComponent(row.dataset.key)
        : tab + "/" + encodeURIComponent(row.dataset.key),
    }));
    const dialog = $("#confirm");
    setText($("#confirm-text"), BULK[action].replace("{n}", items.length).replace("{q}", view.selected));
    $("#confirm-yes").onclick = () => { dialog.close(); bulk(action, items); };
    $("#confirm-no").onclick = () => { dialog.close(); status(action + " selected: cancelled", false); };
    dialog.showModal();
  };
}
async function bulk(action, items) {
  const list = $("#bulk-outcome");
  list.replaceChildren();
  let done = 0;
  for (const item of items) {
    const url = "api/queues/" + encodeURIComponent(view.selected) + "/" + item.path + "/" + action;
    let outcome;
    try {
      const res = await fetch(url, { method: "POST", headers: writeHeaders() });
      const body = await res.json();
      outcome = res.ok ? "done" : res.status + ": " + body.error;
      if (res.ok) done++;
    } catch (err) {
      outcome = "failed: " + err.message;
    }
    const li = Object.assign(document.createElement("li"), { textContent: action + " " + item.name + ": " + outcome });
    li.className = outcome === "done" ? "" : "failed";
    list.appendChild(li);
  }
  status(action + " selected: " + done + " of " + items.length + " done", done < items.length);
  await refresh();
}

// The opened entry (view.job): its fields, its value up to the server's bound and its actions.
const JOB_FIELDS = [
  ["Handle", (j) => j.handle], ["Delivery", (j) => j.tab === "in_flight" ? j.id : null],
  ["Dead letter", (j) => j.tab === "dead" ? j.id : null], ["Position", (j) => j.at],
  ["Due", (j) => j.due_ms != null ? timed(j.due_ms, j.now_ms) : null],
  ["Deadline", (j) => j.deadline_ms != null ? timed(j.deadline_ms, j.now_ms) : null],
  ["Process", (j) => j.tab === "in_flight" ? j.process || "unknown" : null],
  ["Attempt", (j) => j.tab === "in_flight" && j.attempt != null ? String(j.attempt) : null],
  ["Started", (j) => j.started_ms != null ? timed(j.started_ms, j.now_ms) : null],
  ["Attempts", (j) => j.attempts], ["Last error", (j) => j.tab === "dead" ? j.error || "-" : null],
  ["Dead at", (j) => j.dead_at_ms ? timed(j.dead_at_ms, j.now_ms) : null],
  ["Not readable", (j) => j.malformed || (j.tab === "pending" ? j.error : null)],
  ["Length", (j) => j.len + " bytes" + (j.cut ? ", the first " + j.shown_max + " shown" : "")],
];
window.showJob = async () => {
  const box = $("#job");
  if (!view.job) { box.hidden = true; return; }
  const job = view.job;
  const [item, at] = job.split("@");
  const url = "api/queues/" + encodeURIComponent(view.selected) + "/job/" + view.tab + "/" +
    encodeURIComponent(item) + (at ? "?at=" + at : "");
  box.hidden = false;
  setText($("#job-name"), item);
  let j;
  try {
    j = await getJson(url);
  } catch (err) {
    if (job !== view.job) return;
    setText($("#job-error"), err.status === 404 ? "gone: " + err.message : "cannot read: " + err.message);
    $("#job-fields").replaceChildren();
    $("#job-actions").replaceChildren();
    setText($("#job-value"), "");
    return;
  }
  if (job !== view.job) return;
  setText($("#job-error"), "");
  const fields = [];
  for (const [name, f] of JOB_FIELDS) {
    const v = f(j);
    if (v === null || v === undefined) continue;
    fields.push(Object.assign(document.createElement("dt"), { textContent: name }));
    const dd = Object.assign(document.createElement("dd"), { className: "job-" + name.toLowerCase().replace(/ /g, "-") });
    put(dd, v);
    fields.push(dd);
  }
  $("#job-fields").replaceChildren(...fields);
  setText($("#job-value"), j.value ?? j.hex ?? "");
  if (window.showMessage) window.showMessage(j);
  jobButtons(j);
  if (box.dataset.shown !== job) box.scrollIntoView({ block: "start" });
  box.dataset.shown = job;
};
function jobButtons(j) {
  const named = j.tab === "pending" ? j.handle : j.id;
  const path = j.tab === "dead" ? "dead/" + j.at + "/" + encodeURIComponent(j.id) : j.tab + "/" + encodeURIComponent(named);
  const buttons = (view.writes && named && ITEM_ACTIONS[j.tab] || []).map(([action, label]) => {
    const b = Object.assign(document.createElement("button"), { type: "button", textContent: label });
    b.dataset.entry = action; // gated by role like the rows' buttons (access.js)
    b.classList.toggle("danger", DESTRUCTIVE.includes(action));
    const run = async () => { await actOnItem(path, action, named); await window.showJob(); };
    b.onclick = () => (CONFIRM[action] ? ask(action, run, named) : run());
    return b;
  });
  $("#job-actions").replaceChildren(...buttons);
}
$("#job-close").onclick = () => select(view.selected, view.tab);
if (view.job) window.showJob();
