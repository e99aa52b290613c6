"""A contender of the mutual-exclusion run inside nginx: a worker of its
own runs each attempt (tests/mutex/openresty_app.lua, the Lua binding over
cosockets); this process starts it and asks for one attempt per request.

    python3 client_openresty.py HOLDER OUT NODES COUNTER RESOURCES OPS LEASE_MS WAIT_MS KIND PERMITS
                                [OPTIONS [UNTIL_MS]]

The same arguments and the same JSON lines as client.c, for KIND lock or rw
(no semaphore: PERMITS is ignored); OPTIONS the library's options,
NAME=VALUE,... ("-" for none; fencing=1 records each section's fence),
UNTIL_MS (above 0) the wall-clock deadline in ms after which no attempt
starts. REDLOCK_LUA_DIR
names the LuaJIT build of the binding; nginx and its lua module are
Debian's."""

import http.client
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

from client import READ_SHARE, THINK_S, extras

HERE = Path(__file__).resolve().parent
NGINX = "/usr/sbin/nginx"
MODULES = "/usr/lib/nginx/modules"

CONF = """
load_module {modules}/ndk_http_module.so;
load_module {modules}/ngx_http_lua_module.so;
{user}
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 256; }}
http {{
  access_log off;
  lua_socket_log_errors off;
  client_body_temp_path {tmp}/body;
  proxy_temp_path {tmp}/proxy;
  fastcgi_temp_path {tmp}/fastcgi;
  uwsgi_temp_path {tmp}/uwsgi;
  scgi_temp_path {tmp}/scgi;
  lua_package_path "{lua}/?.lua;{here}/?.lua;;";
  lua_package_cpath "{lua}/?.so;;";
  server {{
    listen 127.0.0.1:{port};
    location = /op {{ content_by_lua_block {{ require("openresty_app").op() }} }}
  }}
}}
"""


def start_nginx(tmp: Path) -> (subprocess.Popen, int):
    port = int(subprocess.run([str(HERE.parents[1] / "scripts" / "redis-nodes.sh"), "free-port"],
                              check=True, capture_output=True, text=True).stdout)
    (tmp / "nginx.conf").write_text(CONF.format(
        modules=MODULES, user="user root;" if os.getuid() == 0 else "", tmp=tmp,
        lua=os.environ["REDLOCK_LUA_DIR"], here=HERE, port=port))
    env = {k: v for k, v in os.environ.items() if k != "NGINX"}
    nginx = subprocess.Popen([NGINX, "-p", str(tmp), "-c", str(tmp / "nginx.conf"), "-e",
                              str(tmp / "error.log"), "-g", "daemon off;"], env=env)
    return nginx, port


def main() -> int:
    (holder, out_path, nodes, counter_port, resources, ops, lease_ms, wait_ms, kind,
     _permits) = sys.argv[1:11]
    options, until_ns = extras(sys.argv[11:])
    if kind not in ("lock", "rw"):
        print(f"{holder}: no {kind} run in OpenResty", file=sys.stderr)
        return 64
    with tempfile.TemporaryDirectory(prefix="redlock-mutex-nginx-") as tmp:
        nginx, port = start_nginx(Path(tmp))
        failures = 0
        try:
            conn = None
            deadline = time.monotonic() + 10
            with open(out_path, "a") as out:
                for op in range(int(ops)):
                    if op:
                        time.sleep(THINK_S)
                    if until_ns and time.time_ns() >= until_ns:
                        break
                    query = urllib.parse.urlencode({
                        "holder": holder, "nodes": nodes, "counter": counter_port,
                        "resource": f"r{random.randrange(int(resources))}",
                        "lease": lease_ms, "wait": wait_ms,
                        "options": ",".join(f"{k}={v}" for k, v in options.items())})
                    if kind == "rw":
                        query += "&mode=" + ("read" if random.random() < READ_SHARE else "write")
                    while True:
                        try:
                            conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                            conn.request("GET", "/op?" + query)
                            response = conn.getresponse()
                            body = response.read().decode()
                            break
                        except OSError:
                            conn = None
                            if op or time.monotonic() > deadline:
                                raise
                            time.sleep(0.05)  # nginx still starting
                    if response.status != 200:
                        print(f"{holder}: {response.status} {body}", file=sys.stderr)
                        return 1
                    record = json.loads(body)
                    if record["ok"] and not record.get("wrote", record.get("read")):
                        failures += 1
                    out.write(json.dumps(record) + "\n")
        finally:
            nginx.send_signal(signal.SIGQUIT)
            nginx.wait(timeout=20)
            # The worker's stderr is nginx's error log, which holds the
            # library's events (openresty_app.lua, lines that begin with
            # their time): into this client's own, without nginx's lines.
            log = Path(tmp) / "error.log"
            if log.exists():
                sys.stderr.writelines(line for line in log.read_text(errors="replace")
                                      .splitlines(keepends=True)
                                      if re.match(r"\d\d:\d\d:\d\d\.\d{3} ", line))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
