"""The bench cycle inside nginx: the Lua binding driving the engine over
cosockets (cycle.lua, the same loop as ours.lua), in one request to a worker
of an nginx this script starts; prints the figures that request returns.

    openresty.py --nodes URI[,URI...] [--cycles N] [--warmup N] [--lease MS] [--keys K]
                 [--floor 1]

With --floor 1 the same request runs the cosocket floor (floor_cosocket.lua)
instead of the binding.
REDLOCK_LUA_DIR names the LuaJIT build of the binding; nginx and its lua
module are Debian's."""

import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]

CONF = """
load_module /usr/lib/nginx/modules/ndk_http_module.so;
load_module /usr/lib/nginx/modules/ngx_http_lua_module.so;
{user}
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 256; }}
http {{
  access_log off;
  client_body_temp_path {tmp}/body;
  proxy_temp_path {tmp}/proxy;
  fastcgi_temp_path {tmp}/fastcgi;
  uwsgi_temp_path {tmp}/uwsgi;
  scgi_temp_path {tmp}/scgi;
  lua_package_path "{lua}/?.lua;{here}/?.lua;;";
  lua_package_cpath "{lua}/?.so;;";
  server {{
    listen 127.0.0.1:{port};
    location = /ping {{ content_by_lua_block {{ ngx.say("pong") }} }}
    location = /bench {{
      content_by_lua_block {{
        local args = ngx.req.get_uri_args()
        if args.floor then
          ngx.print(require("cycle")(args, "floor-openresty", require("floor_cosocket")))
        else
          ngx.print(require("cycle")(args, "ours-openresty"))
        end
      }}
    }}
  }}
}}
"""


def main() -> int:
    opt = {"cycles": "1000", "warmup": "100", "lease": "10000", "keys": "1", "prefix": "bench"}
    args = sys.argv[1:]
    for name, value in zip(args[::2], args[1::2]):
        opt[name.lstrip("-")] = value
    port = int(subprocess.run([str(ROOT / "scripts" / "redis-nodes.sh"), "free-port"],
                              check=True, capture_output=True, text=True).stdout)
    with tempfile.TemporaryDirectory(prefix="redlock-bench-nginx-") as tmp:
        Path(tmp, "nginx.conf").write_text(CONF.format(
            user="user root;" if os.getuid() == 0 else "", tmp=tmp,
            lua=os.environ["REDLOCK_LUA_DIR"], here=HERE, port=port))
        env = {k: v for k, v in os.environ.items() if k != "NGINX"}
        nginx = subprocess.Popen(["/usr/sbin/nginx", "-p", tmp, "-c", f"{tmp}/nginx.conf", "-e",
                                  f"{tmp}/error.log", "-g", "daemon off;"], env=env)
        try:
            deadline = time.monotonic() + 10
            while True:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/ping", timeout=5).read()
                    break
                except (urllib.error.URLError, OSError):
                    if time.monotonic() > deadline or nginx.poll() is not None:
                        print("openresty.py: nginx did not start", file=sys.stderr)
                        return 1
                    time.sleep(0.02)
            url = f"http://127.0.0.1:{port}/bench?" + urllib.parse.urlencode(opt)
            sys.stdout.write(urllib.request.urlopen(url, timeout=600).read().decode())
        finally:
            nginx.send_signal(signal.SIGQUIT)
            nginx.wait(timeout=20)
    return 0


if __name__ == "__main__":
    sys.exit(main())
