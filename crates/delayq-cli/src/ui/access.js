// The page's role: asked of the server (api/whoami, with the token typed in, if any; behind a
// proxy that adds the token itself, with none), shown in the header; every write button the
// role may not use is disabled, its title saying which role it needs.
"use strict";
const ROLES = ["read-only", "reader", "operator", "admin"];
const access = { role: "read-only", writes: false, needs: {} };

// Why `action` is not for this page, or "" when it is.
function whyNot(action) {
  if (!access.writes) return "read-only dashboard: started without a role's token";
  const needed = access.needs[action] || "admin";
  if (ROLES.indexOf(access.role) >= ROLES.indexOf(needed)) return "";
  const given = access.role === "read-only" ? "no token" : "the " + access.role + " role";
  return "needs the " + needed + " role (this page has " + given + ")";
}

function gate(button) {
  const why = whyNot(button.dataset.action || button.dataset.entry);
  button.disabled = !!why;
  button.title = why;
}
function gateAll() {
  document.querySelectorAll("button[data-action], button[data-entry]").forEach(gate);
}

let asked = 0;
async function whoami() {
  const mine = ++asked;
  const res = await fetch("api/whoami", { headers: authHeaders() });
  const body = await res.json();
  if (mine !== asked) return; // a later question (the token typed on) answers instead
  if (res.ok) Object.assign(access, body);
  else Object.assign(access, { role: "read-only" });
  view.role = res.ok ? body.role : "read-only (" + body.error + ")";
  setText($("#mode"), $("#mode").textContent.replace(/^role [^·]*/, "role " + view.role + " "));
  gateAll();
}

// Item buttons are made as rows (or an entry's detail) appear: each is gated when it is added.
for (const made of ["#list tbody", "#job-actions"]) {
  new MutationObserver(gateAll).observe($(made), { childList: true, subtree: true });
}
$("#token").addEventListener("input", whoami);
whoami();
