"""The Lua binding inside a real nginx (Debian's lua module, OpenResty's
runtime), driving the engine over cosockets: a worker is never blocked by a
lock call, concurrent requests exclude each other, nothing grows over many
requests, multi-locks work, and a phase without cosockets gets an error.

Run by CTest with REDLOCK_NGINX, REDLOCK_NGINX_NDK_MODULE,
REDLOCK_NGINX_LUA_MODULE and REDLOCK_LUA_DIR (redlock.lua and redlock_core.so built for LuaJIT) in the
environment (REDLOCK_ prefixed: nginx reads NGINX itself). Starts its own redis-server nodes and nginx.
"""

import http.client
import os
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
NODES_SCRIPT = ROOT / "scripts" / "redis-nodes.sh"

APP = r"""
local redlock = require "redlock"
local state = ngx.shared.state
local app = {}
local client

local function get_client()
  if not client then
    local uris = {}
    for uri in io.lines(NODES_FILE) do
      uris[#uris + 1] = uri
    end
    client = assert(redlock.new(uris, { node_timeout_ms = 500, connect_timeout_ms = 500,
                                        retry_delay_ms = 20, retry_jitter_ms = 10,
                                        key_prefix = "openresty:" }))
  end
  return client
end
app.get_client = get_client

-- Takes the lock, counts the holders in a shared dict around a pause.
function app.work()
  local lock = get_client():get_lock(ngx.var.arg_name or "shared")
  local ok, err = lock:try_lock(tonumber(ngx.var.arg_wait or 30000), 10000)
  if not ok then
    ngx.status = 409
    ngx.say(tostring(err))
    return
  end
  if state:incr("inside", 1, 0) > 1 then
    state:incr("overlaps", 1, 0)
  end
  local pause = tonumber(ngx.var.arg_pause or 0.002)
  if pause > 0 then
    ngx.sleep(pause)
  end
  state:incr("inside", -1)
  local released, unlock_err = lock:unlock()
  if not released then
    ngx.status = 500
    ngx.say(tostring(unlock_err))
    return
  end
  state:incr("done", 1, 0)
  ngx.say("ok")
end

function app.multi()
  local lock = get_client():get_multi_lock({ "m1", "m2", "m3" })
  local ok, err = lock:try_lock(0, 10000)
  if not ok then
    ngx.status = 409
    ngx.say(tostring(err))
    return
  end
  ngx.say("held ", lock:token())
  local other = get_client():get_lock("m2")
  local taken, other_err = other:try_lock(0, 1000)
  ngx.say("m2 alone: ", tostring(taken), " ", other_err and other_err.name or "")
  assert(lock:extend(20000))
  ngx.say("validity ", lock:validity_ms() > 19000)
  assert(lock:unlock())
  ngx.say("m2 after: ", tostring(other:try_lock(0, 1000)))
  assert(other:unlock())
end

function app.stats()
  collectgarbage()
  collectgarbage()
  ngx.say(state:get("done") or 0, " ", state:get("overlaps") or 0, " ",
          math.floor(collectgarbage("count")))
end

return app
"""

CONF = r"""
load_module {ndk};
load_module {lua};
{user}
worker_processes {workers};
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 2048; }}
http {{
  access_log off;
  client_body_temp_path {tmp}/body;
  proxy_temp_path {tmp}/proxy;
  fastcgi_temp_path {tmp}/fastcgi;
  uwsgi_temp_path {tmp}/uwsgi;
  scgi_temp_path {tmp}/scgi;
  lua_package_path "{module}/?.lua;{tmp}/?.lua;;";
  lua_package_cpath "{module}/?.so;;";
  lua_shared_dict state 1m;
  init_worker_by_lua_block {{ NODES_FILE = "{nodes}" }}
  server {{
    listen 127.0.0.1:{port};
    keepalive_requests 100000;
    location = /work {{ content_by_lua_block {{ require("app").work() }} }}
    location = /multi {{ content_by_lua_block {{ require("app").multi() }} }}
    location = /stats {{ content_by_lua_block {{ require("app").stats() }} }}
    location = /ping {{ content_by_lua_block {{ ngx.say("pong") }} }}
    location = /filter {{
      content_by_lua_block {{ ngx.say("body") }}
      header_filter_by_lua_block {{
        local lock = require("app").get_client():get_lock("filtered")
        local ok, err = lock:try_lock(0, 1000)
        ngx.header["X-Lock"] = tostring(ok) .. " " .. tostring(err)
      }}
    }}
  }}
}}
"""


def free_port():
    return int(subprocess.run([str(NODES_SCRIPT), "free-port"], check=True,
                              capture_output=True, text=True).stdout)


class Nginx:
    def __init__(self, tmp: Path, nodes_file: Path, workers: int):
        env = os.environ
        self.tmp = tmp
        self.timeouts_expected = False
        self.port = free_port()
        (tmp / "app.lua").write_text(APP)
        (tmp / "nginx.conf").write_text(CONF.format(
            ndk=env["REDLOCK_NGINX_NDK_MODULE"], lua=env["REDLOCK_NGINX_LUA_MODULE"],
            user="user root;" if os.getuid() == 0 else "", workers=workers, tmp=tmp,
            module=env["REDLOCK_LUA_DIR"], nodes=nodes_file, port=self.port))
        self.process = subprocess.Popen(
            [env["REDLOCK_NGINX"], "-p", str(tmp), "-c", str(tmp / "nginx.conf"), "-e",
             str(tmp / "error.log"), "-g", "daemon off;"])
        deadline = time.monotonic() + 10
        while True:
            try:
                self.get("/ping")
                break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("nginx did not start: " + self.errors())
                time.sleep(0.02)

    def connection(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)

    def get(self, path, conn=None):
        c = conn or self.connection()
        c.request("GET", path)
        r = c.getresponse()
        body = r.read().decode()
        if conn is None:
            c.close()
        return r.status, body, r

    def workers(self):
        out = subprocess.run(["pgrep", "-P", str(self.process.pid)], capture_output=True,
                             text=True).stdout.split()
        return [int(pid) for pid in out]

    def errors(self):
        """The log's errors, but for the read timeouts of stopped nodes (the
        lua module logs every cosocket timeout)."""
        log = self.tmp / "error.log"
        lines = log.read_text().splitlines() if log.exists() else []
        return "\n".join(line for line in lines
                         if any(f"[{lvl}]" in line for lvl in ("error", "alert", "crit", "emerg"))
                         and not (self.timeouts_expected and "lua tcp socket read timed out" in line))

    def stop(self):
        self.process.send_signal(signal.SIGQUIT)
        self.process.wait(timeout=20)


@pytest.fixture(scope="module")
def nodes(tmp_path_factory):
    path = tmp_path_factory.mktemp("nodes")
    subprocess.run([str(NODES_SCRIPT), "start", str(path), "5"], check=True,
                   stdout=subprocess.DEVNULL)
    yield path
    subprocess.run([str(NODES_SCRIPT), "stop", str(path)], check=True)


@pytest.fixture
def nginx_factory(tmp_path, nodes):
    if not all(os.environ.get(v) for v in ("REDLOCK_NGINX", "REDLOCK_NGINX_NDK_MODULE",
                                          "REDLOCK_NGINX_LUA_MODULE", "REDLOCK_LUA_DIR")):
        pytest.skip("nginx with the lua module was not found by CMake")
    started = []

    def start(workers=1):
        n = Nginx(tmp_path / f"nginx{len(started)}", nodes / "uris", workers)
        started.append(n)
        return n

    for d in ("nginx0", "nginx1"):
        (tmp_path / d).mkdir()
    yield start
    for n in started:
        n.stop()
        assert n.errors() == "", n.errors()


@contextmanager
def paused(nodes, which):
    pids = [int((nodes / str(i) / "pid").read_text()) for i in which]
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)


def test_a_worker_keeps_serving_while_a_lock_call_waits_on_stopped_nodes(nginx_factory, nodes):
    nginx = nginx_factory(workers=1)
    nginx.timeouts_expected = True
    assert nginx.get("/work?name=warm")[0] == 200
    latencies = []
    result = {}

    def waiter():
        started = time.monotonic()
        result["status"], result["body"], _ = nginx.get("/work?name=slow&wait=2000&pause=0")
        result["took"] = time.monotonic() - started

    with paused(nodes, [1, 2, 3]):
        thread = threading.Thread(target=waiter)
        thread.start()
        conn = nginx.connection()
        while thread.is_alive():
            started = time.monotonic()
            status, body, _ = nginx.get("/ping", conn)
            latencies.append(time.monotonic() - started)
            assert status == 200 and body == "pong\n"
            time.sleep(0.005)
        thread.join()
    assert result["status"] == 409 and "noquorum" in result["body"], result
    assert result["took"] >= 1.9, result
    assert len(latencies) > 100
    # With the blocking driver a ping waited for the lock call, up to the
    # node timeout (500 ms); over cosockets the worker is never held.
    assert max(latencies) < 0.020, sorted(latencies)[-5:]


def test_two_hundred_concurrent_requests_never_see_two_holders(nginx_factory):
    nginx = nginx_factory(workers=2)
    with ThreadPoolExecutor(max_workers=200) as pool:
        answers = list(pool.map(lambda _: nginx.get("/work?name=contended"), range(200)))
    statuses = [status for status, _, _ in answers]
    assert statuses == [200] * 200, [body for status, body, _ in answers if status != 200][:3]
    done, overlaps, _ = nginx.get("/stats")[1].split()
    assert int(done) == 200 and int(overlaps) == 0


def test_no_growth_of_cosockets_or_memory_over_ten_thousand_requests(nginx_factory):
    nginx = nginx_factory(workers=1)
    worker = nginx.workers()[0]
    conn = nginx.connection()

    def run(n):
        for _ in range(n):
            status, body, _ = nginx.get("/work?name=steady&pause=0", conn)
            assert status == 200, body

    def fds():
        return len(os.listdir(f"/proc/{worker}/fd"))

    def rss_kb():
        for line in Path(f"/proc/{worker}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")

    run(2000)
    fds0, rss0, lua0 = fds(), rss_kb(), int(nginx.get("/stats", conn)[1].split()[2])
    run(10000)
    fds1, rss1, lua1 = fds(), rss_kb(), int(nginx.get("/stats", conn)[1].split()[2])
    assert fds1 <= fds0 + 2, (fds0, fds1)
    assert rss1 - rss0 < 2048, (rss0, rss1)
    assert lua1 - lua0 < 512, (lua0, lua1)


def test_a_location_takes_a_multi_lock(nginx_factory):
    nginx = nginx_factory(workers=1)
    status, body, _ = nginx.get("/multi")
    assert status == 200, body
    lines = body.splitlines()
    assert lines[0].startswith("held ") and len(lines[0]) == 5 + 32
    assert lines[1] == "m2 alone: nil locked"
    assert lines[2] == "validity true"
    assert lines[3] == "m2 after: true"


def test_a_phase_without_cosockets_gets_an_error_that_says_so(nginx_factory):
    nginx = nginx_factory(workers=1)
    status, body, response = nginx.get("/filter")
    assert status == 200 and body == "body\n"
    header = response.getheader("X-Lock")
    assert header.startswith("nil unsupported: "), header
    assert "header_filter" in header and "ngx.timer.at" in header, header
