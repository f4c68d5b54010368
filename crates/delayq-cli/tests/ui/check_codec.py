"""Browser check of codecs on the dashboard: a dashboard whose default codec is string, with
`--codec-for` naming Kryo for one queue and `auto` for another, shows Kryo values decoded with
their Java class (not hex), each queue's codec in its view, and for `auto` the codec and class
recognised per value.

`drive` is drive.py's module: its helpers and the processes it cleans up.
"""

# The queue shown, its codec line, and the Value cell of each row of its open tab (pending: Due,
# Handle, Value), read at one moment.
SHOWN = """
return {name: document.querySelector('#detail-name').textContent,
        codec: document.querySelector('#detail-codec').textContent,
        values: [...document.querySelectorAll('#list tbody tr')].map(r => r.cells[2].textContent)};
"""


def fill(drive, redis):
    kryo = ("--codec", "kryo")
    drive.delayq(redis, *kryo, "offer", "codec:kryo", '"hello from Java"', "--delay", "30m")
    drive.delayq(redis, *kryo, "offer", "codec:kryo", '{"map":[["sku","x-1"]]}', "--delay", "40m")
    drive.delayq(redis, "offer", "codec:text", "plain text", "--delay", "30m")
    drive.delayq(redis, *kryo, "offer", "codec:mixed", "42", "--delay", "30m")
    drive.delayq(redis, "--codec", "json", "--java-class", "com.example.Order", "offer",
                 "codec:mixed", '{"id":7}', "--delay", "40m")


def shows(browser, drive, ui, queue, count):
    """Opens `queue`'s pending tab; its `count` values as shown, and the queue's codec line."""
    browser.cmd("POST", "/url", {"url": ui + "/#/queue/" + queue.replace(":", "%3A") + "/pending"})
    shown = drive.wait(f"{count} values of {queue}", lambda: (
        lambda s: s if s["name"] == queue and len(s["values"]) == count else None)(
        browser.js(SHOWN)))
    return shown["values"], shown["codec"]


def check_codec(browser, drive):
    redis = drive.Redis()
    fill(drive, redis)
    port = drive.free_port()
    ui = f"http://127.0.0.1:{port}"
    drive.start([drive.DELAYQ, "--url", redis.url, "--codec-for", "codec:kryo=kryo,codec:mixed=auto",
                 "ui", "--listen", f"127.0.0.1:{port}"])
    drive.wait("the codec dashboard", lambda: drive.http("GET", ui + "/api/queues")[0] == 200)

    values, codec = shows(browser, drive, ui, "codec:kryo", 2)
    assert values == ['"hello from Java"  [java.lang.String]',
                      '{"map":[["sku","x-1"]]}  [java.util.HashMap]'], values
    assert codec == "codec kryo", codec
    browser.screenshot("codec.png", at="#search")
    print(f"codec:kryo (Kryo on a string dashboard): {values}")

    values, codec = shows(browser, drive, ui, "codec:mixed", 2)
    assert values == ["42  [kryo java.lang.Long]",
                      '{"@class":"com.example.Order","id":7}  [json com.example.Order]'], values
    assert codec == "codec auto", codec
    print(f"codec:mixed (auto): {values}")

    values, codec = shows(browser, drive, ui, "codec:text", 1)
    assert (values, codec) == (["plain text"], "codec string"), (values, codec)
    header = browser.js("return document.querySelector('#mode').textContent")
    assert header.endswith("default codec string"), header
