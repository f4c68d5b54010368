// A queue's flow-control limits in its view (api/queues/NAME/limits): what is stored, how much
// is in use (slots held, values held back per key, the most first), and for the admin a form
// that stores exactly what it holds (an empty field: no such limit) and a button that clears
// them (asks first). Loaded after app.js and access.js: it adds itself to `more.detail`.
"use strict";
const limitsView = { name: null, stored: null };
const LIMIT_FIELDS = ["concurrency", "rate", "key_pointer", "key_regex", "key_concurrency", "key_rate"];
CONFIRM["clear-limits"] = "Remove every limit of {q}? Its workers then run as fast as their own --concurrency lets them.";

const showDetailBeforeLimits = more.detail;
more.detail = (name) => {
  showDetailBeforeLimits(name);
  getJson("api/queues/" + encodeURIComponent(name) + "/limits").then((d) => {
    if (name === view.selected) fillLimits(name, d);
  }, (err) => {
    if (name === view.selected) setText($("#limits-summary"), "cannot read: " + err.message);
  });
};

// "concurrency 3 · 100/1s · key /customer: 1 at a time, 5/1s", or "none".
function describeLimits(l) {
  if (!l) return "none: workers run as their own --concurrency lets them";
  const parts = [];
  if (l.concurrency !== null) parts.push("concurrency " + l.concurrency);
  if (l.rate !== null) parts.push("rate " + l.rate);
  const key = l.key_pointer !== null ? "pointer " + l.key_pointer : l.key_regex !== null ? "regex " + l.key_regex
    : l.key_concurrency !== null || l.key_rate !== null ? "keys from the worker's closure" : null;
  if (key) {
    const per = [];
    if (l.key_concurrency !== null) per.push(l.key_concurrency + " at a time");
    if (l.key_rate !== null) per.push("rate " + l.key_rate);
    parts.push("per key (" + key + "): " + (per.join(", ") || "no limit"));
  }
  return parts.join(" · ");
}

function fillLimits(name, d) {
  setText($("#limits-summary"), describeLimits(d.limits));
  const u = d.usage;
  const slots = d.limits && d.limits.concurrency !== null ? u.slots_held + " of " + d.limits.concurrency : String(u.slots_held);
  setText($("#limits-usage"), "slots held " + slots + " · held back " + u.values_held + " (" + u.keys_held + (u.keys_held === 1 ? " key)" : " keys)"));
  sync($("#limits-keys tbody"), u.top_held, (k) => k.key, (row, k) => {
    const c = cells(row, 2, ["", ""]);
    setText(c[0], k.key);
    setText(c[1], String(k.values));
  });
  $("#limits-keys").hidden = u.top_held.length === 0;
  // Only a role that may store limits sees the form to.
  $("#limits-form").hidden = !!whyNot("set-limits");
  // The form shows what is stored when the queue is opened or its limits change, never while
  // somebody types into it.
  const stored = JSON.stringify(d.limits);
  if (name !== limitsView.name || stored !== limitsView.stored) {
    Object.assign(limitsView, { name, stored });
    for (const f of LIMIT_FIELDS) {
      const v = d.limits ? d.limits[f] : null;
      $("#limit-" + f).value = v === null ? "" : String(v);
    }
  }
}

async function sendLimits(action, body) {
  const url = "api/queues/" + encodeURIComponent(view.selected) + "/limits/" + action;
  const headers = { ...writeHeaders(), "Content-Type": "application/json" };
  const res = await fetch(url, { method: "POST", headers, body: JSON.stringify(body || {}) });
  const answer = await res.json();
  if (!res.ok) status(action + " refused (" + res.status + "): " + answer.error, true);
  else status(action + ": " + describeLimits(answer.limits), false);
  await refresh();
}

$("#limits-form").onsubmit = (e) => {
  e.preventDefault();
  const body = {};
  for (const f of LIMIT_FIELDS) {
    const v = $("#limit-" + f).value.trim();
    if (v) body[f] = v;
  }
  sendLimits("set-limits", body);
};
$("#limits-clear").onclick = () => ask("clear-limits", () => sendLimits("clear-limits"));
