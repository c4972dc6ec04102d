#!/usr/bin/env python3
"""The manager at 10,000 items: time to add them and to list them, and the daemon's memory.

Usage: start a daemon with the secret `x` on PORT (fastpull daemon --rpc-secret x --rpc-listen-port
PORT --list /tmp/scale/list.sqlite -d /tmp/scale, or aria2c --enable-rpc --rpc-secret=x
--rpc-listen-port=PORT --max-download-result=100000 for the same figures from aria2), then
`python3 Benchmarks/manager/scale.py PORT PID` with the daemon's process id (for its RSS).
Every item is added paused, so nothing is downloaded.
"""
import json
import sys
import time
import urllib.request

port, pid = int(sys.argv[1]), sys.argv[2]


def post(payload):
    request = urllib.request.Request(f"http://127.0.0.1:{port}/jsonrpc", json.dumps(payload).encode())
    return json.loads(urllib.request.urlopen(request).read())


def call(method, params):
    return post({"jsonrpc": "2.0", "id": "s", "method": method, "params": ["token:x"] + params})


def rss():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS"):
            return line.split()[1] + " kB"


print("rss at start", rss())
started = time.time()
for chunk in range(100):
    post([{"jsonrpc": "2.0", "id": i, "method": "aria2.addUri",
           "params": ["token:x", [f"http://127.0.0.1:9/f-{chunk}-{i}"], {"pause": "true", "out": f"f{chunk}-{i}.bin"}]}
          for i in range(100)])
print("add 10,000 paused (100 batches of 100): %.2f s" % (time.time() - started))
started = time.time()
for i in range(200):
    call("aria2.addUri", [[f"http://127.0.0.1:9/single-{i}"], {"pause": "true", "out": f"s{i}.bin"}])
print("add 200 one call each: %.1f ms per call" % ((time.time() - started) * 1000 / 200))
keys = ["gid", "status", "totalLength", "completedLength", "downloadSpeed", "files", "errorMessage"]
for label, params in [("tellWaiting 0..1000 (the page's keys)", [0, 1000, keys]),
                      ("tellWaiting all 10,200 (the page's keys)", [0, 20000, keys]),
                      ("tellWaiting all 10,200 (every key)", [0, 20000]),
                      ("tellWaiting last 10 (offset -1)", [-1, 10, ["gid"]])]:
    started = time.time()
    answer = call("aria2.tellWaiting", params)
    print("%s: %.1f ms, %d items" % (label, (time.time() - started) * 1000, len(answer["result"])))
for method, params in [("aria2.getGlobalStat", []), ("aria2.tellActive", [keys]), ("aria2.tellStopped", [0, 1000, keys])]:
    started = time.time()
    call(method, params)
    print("%s: %.1f ms" % (method, (time.time() - started) * 1000))
gid = call("aria2.tellWaiting", [5000, 1, ["gid"]])["result"][0]["gid"]
started = time.time()
call("aria2.unpause", [gid])
print("unpause one in 10,200: %.1f ms" % ((time.time() - started) * 1000))
print("rss after", rss())
