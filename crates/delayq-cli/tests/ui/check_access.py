"""Roles in the browser: a second `delayq ui` under --base-path /delayq with an operator's and
an admin's token; the page, given the operator's token, says its role, disables what only the
admin may do (the title says why; the API answers 403 and nothing is purged) and retries a dead
letter. Then nginx in front of it, with deploy/nginx/delayq.conf as shipped (only its paths and
ports changed): people log in with basic auth and get their role's token from nginx.
`drive` is drive.py's module: its helpers start and stop the processes."""
import base64
import os
import shutil
import tempfile
import urllib.error
import urllib.request

OPERATOR = "ui-operator-token-0123456789"
ADMIN = "ui-admin-token-0123456789abcd"
# Two dead-letter records (attempts 1, error "e") of delayq's layout, values from ARGV.
DEAD = ("for _, v in ipairs(ARGV) do redis.call('RPUSH', KEYS[1], 'DQD1' .. "
        "string.char(0, 0, 0, 1) .. string.rep(string.char(0), 8) .. "
        "string.char(0, 0, 0, 1) .. 'e' .. v) end")


def token_file(directory, name, token):
    path = os.path.join(directory, name)
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
        f.write(token + "\n")
    return path


def type_token(browser, token):
    """Types `token` into the page's token field, as a person would (an input event)."""
    browser.js("const t = document.querySelector('#token'); t.value = arguments[0]; "
               "t.dispatchEvent(new Event('input'))", token)


def check_access(drive, browser, redis):
    redis.cli("EVAL", DEAD, "1", "delayq_dead:{ui:roles}", "first", "second")
    directory = tempfile.mkdtemp(prefix="delayq-ui-tokens-")
    port = drive.free_port()
    base = f"http://127.0.0.1:{port}/delayq"
    drive.start([drive.DELAYQ, "--url", redis.url, "ui", "--listen", f"127.0.0.1:{port}",
                 "--base-path", "/delayq",
                 "--operator-token-file", token_file(directory, "operator", OPERATOR),
                 "--admin-token-file", token_file(directory, "admin", ADMIN),
                 "--allow-host", "delayq.example.com"])
    drive.wait("delayq ui under /delayq", lambda: drive.http("GET", base + "/healthz")[0] == 200)
    assert drive.http("GET", f"http://127.0.0.1:{port}/api/queues")[0] == 404

    browser.cmd("POST", "/url", {"url": base + "/#/queue/ui%3Aroles/dead"})
    type_token(browser, OPERATOR)
    drive.wait("the operator's role shown", lambda: browser.js(
        "return document.querySelector('#mode').textContent").startswith("role operator"))
    rows = "return document.querySelectorAll('#list tbody tr').length"
    drive.wait("two dead letters listed", lambda: browser.js(rows) == 2)
    state = """return [...document.querySelectorAll(arguments[0])]
        .map(b => [b.dataset.action || b.dataset.entry, b.disabled, b.title])"""
    purge = browser.js(state, "button[data-action='purge-dead']")[0]
    assert purge[1] and "needs the admin role" in purge[2], purge
    def gated():
        buttons = browser.js(state, "#list tbody button[data-entry]")
        return len(buttons) == 4 and all(
            disabled == (action == "delete") for action, disabled, _ in buttons)
    drive.wait("the rows' buttons made and gated", gated)
    assert not browser.js(state, "button[data-action='replay']")[0][1]

    auth = {"Authorization": "Bearer " + OPERATOR}
    status, body = drive.http("POST", base + "/api/queues/ui:roles/purge-dead", headers=auth)
    assert status == 403 and "admin" in body["error"], (status, body)
    assert redis.cli("LLEN", "delayq_dead:{ui:roles}") == "2"

    browser.js("document.querySelector('#list tbody button[data-entry=\"retry\"]').click()")
    drive.wait("a dead letter retried", lambda: redis.cli("LLEN", "delayq_dead:{ui:roles}") == "1")
    assert redis.cli("LRANGE", "ui:roles", "0", "-1") == "first"
    drive.wait("the retry said", lambda: "done" in browser.js(
        "return document.querySelector('#status').textContent"))
    # The entry's detail gates its buttons as the rows do: an operator retries, never deletes.
    drive.wait("one dead letter left", lambda: browser.js(rows) == 1)
    browser.js("document.querySelector('#list tbody tr td').click()")
    drive.wait("the detail's buttons gated", lambda: [
        b[:2] for b in browser.js(state, "#job-actions button")] == [["retry", False],
                                                                      ["delete", True]])
    title = browser.js(state, "#job-actions button")[1][2]
    assert "needs the admin role" in title, title
    # One row in the overview, so that the detail with its disabled buttons is in the picture.
    browser.js("const f = document.querySelector('#filter'); f.value = 'roles'; "
               "f.dispatchEvent(new Event('input'))")
    drive.wait("one queue listed", lambda: browser.js(
        "return document.querySelector('#page').textContent") == "1–1 of 1 queues")
    browser.screenshot("role-refused.png")
    print(f"operator under /delayq: purge disabled ({purge[2]!r}), API 403; a retry done")
    check_proxy(drive, redis, port, directory)


ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../.."))


def fetch(url, method="GET", user=None, host=None):
    """(status, body text, Location) of one request, logged in as `user` (password: the name)."""
    req = urllib.request.Request(url, method=method)
    if method == "POST":
        req.add_header("X-Delayq-Write", "1")
    if user:
        req.add_header("Authorization", "Basic " + base64.b64encode(
            f"{user}:{user}".encode()).decode())
    if host:
        req.add_header("Host", host)

    class Stay(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args):
            return None
    try:
        with urllib.request.build_opener(Stay).open(req, timeout=30) as res:
            return res.status, res.read().decode(), res.headers.get("Location")
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode(), err.headers.get("Location")


def check_forged_form(drive, redis, proxy_port):
    """The admin, logged in to nginx in the browser, visits another site whose page posts a
    form to the dashboard: nginx adds the admin's token, and delayq refuses the write (no
    X-Delayq-Write, Sec-Fetch-Site: cross-site); the dead letter stays."""
    import http.server
    import threading
    target = f"http://127.0.0.1:{proxy_port}/delayq/api/queues/ui:roles/purge-dead"
    page = (f'<form id="f" method="POST" action="{target}" enctype="text/plain">'
            '<input name=\'{"a":"\' value=\'b"}\'></form>'
            '<script>document.getElementById("f").submit()</script>').encode()

    class Evil(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args):
            pass

    evil = http.server.HTTPServer(("127.0.0.1", 0), Evil)
    threading.Thread(target=evil.serve_forever, daemon=True).start()
    browser = drive.Browser()
    try:
        # Logged in as the admin: the browser keeps the login for the dashboard's paths (the
        # page is then opened without it in its address, so its relative URLs carry none).
        browser.cmd("POST", "/url", {"url": f"http://ada:ada@127.0.0.1:{proxy_port}/delayq/"})
        browser.cmd("POST", "/url", {"url": f"http://127.0.0.1:{proxy_port}/delayq/"})
        drive.wait("the admin's page", lambda: browser.js(
            "return document.querySelector('#mode').textContent").startswith("role admin"))
        # Another site ("localhost" is not the site "127.0.0.1"), its form sent on load.
        browser.cmd("POST", "/url", {"url": f"http://localhost:{evil.server_port}/"})
        answer = drive.wait("the form's answer", lambda: (lambda t: t if "error" in t or
                            "purged" in t else None)(browser.js(
                                "return document.body ? document.body.textContent : ''")))
        assert "purged" not in answer, answer
        assert redis.cli("LLEN", "delayq_dead:{ui:roles}") == "1", "the forged form purged"
        print(f"a cross-site form through nginx with the admin's login: refused ({answer!r})")
    finally:
        browser.close()
        evil.shutdown()


def check_proxy(drive, redis, ui_port, directory):
    """nginx with deploy/nginx/delayq.conf in front of `delayq ui --base-path /delayq`."""
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    with open(os.path.join(directory, "delayq.htpasswd"), "w") as f:
        f.write("ada:{PLAIN}ada\nolga:{PLAIN}olga\nrita:{PLAIN}rita\n")
    with open(os.path.join(directory, "delayq-roles.conf"), "w") as f:
        f.write(f'ada "Bearer {ADMIN}";\nolga "Bearer {OPERATOR}";\n')
    port = drive.free_port()
    with open(os.path.join(ROOT, "deploy/nginx/delayq.conf")) as f:
        shipped = "".join(line for line in f if not line.lstrip().startswith("#"))
    site = (shipped.replace("listen 80;", f"listen 127.0.0.1:{port};")
            .replace("127.0.0.1:8080", f"127.0.0.1:{ui_port}")
            .replace("/etc/nginx/", directory + "/"))
    assert site.count(directory) == 2 and f"listen 127.0.0.1:{port};" in site, site
    conf = os.path.join(directory, "nginx.conf")
    with open(conf, "w") as f:
        f.write(f"""daemon off;
master_process off;
pid {directory}/nginx.pid;
error_log {directory}/error.log;
events {{}}
http {{
    access_log {directory}/access.log;
    client_body_temp_path {directory}/body;
    proxy_temp_path {directory}/proxy;
    fastcgi_temp_path {directory}/fastcgi;
    uwsgi_temp_path {directory}/uwsgi;
    scgi_temp_path {directory}/scgi;
{site}
}}
""")
    drive.start([nginx, "-p", directory, "-c", conf])
    proxy = f"http://127.0.0.1:{port}/delayq"
    name = "delayq.example.com"
    drive.wait("nginx", lambda: fetch(proxy + "/healthz", user="rita", host=name)[0] == 200)

    assert fetch(proxy + "/api/queues", host=name)[0] == 401, "no login, yet in"
    status, _, location = fetch(proxy, host=name)
    assert status == 308 and location.endswith("/delayq/"), (status, location)
    status, page, _ = fetch(proxy + "/", user="rita", host=name)
    assert status == 200 and "access.js" in page, status
    for user, role in (("rita", "read-only"), ("olga", "operator"), ("ada", "admin")):
        status, body, _ = fetch(proxy + "/api/whoami", user=user, host=name)
        assert status == 200 and f'"role":"{role}"' in body, (user, status, body)
    purge = proxy + "/api/queues/ui:roles/purge-dead"
    for user, want in (("rita", 401), ("olga", 403)):
        status, body, _ = fetch(purge, "POST", user=user, host=name)
        assert status == want and OPERATOR not in body, (user, status, body)
    assert redis.cli("LLEN", "delayq_dead:{ui:roles}") == "1"
    check_forged_form(drive, redis, port)
    status, body, _ = fetch(purge, "POST", user="ada", host=name)
    assert (status, body) == (200, '{"purged":1}'), (status, body)
    # The Host is passed on: a name delayq was not told of (--allow-host) is refused.
    assert fetch(proxy + "/api/queues", user="rita", host="other.example")[0] == 421
    shutil.rmtree(directory, ignore_errors=True)  # the token files
    print(f"nginx under /delayq: logins read-only, operator, admin got their roles; purge "
          f"refused 401/403, done by the admin")
