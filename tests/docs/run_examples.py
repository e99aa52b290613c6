#!/usr/bin/env python3
"""Runs every example of the documentation against real redis-server nodes.

    tests/docs/run_examples.py [--build DIR] [--jar JAR] [-v] [FILE.md ...]

The fenced code blocks of README.md, docs/*.md and bindings/*/README.md (or
of the files given) are run, in order, each document in a working directory
of its own, with REDLOCK_NODES naming five nodes started here
(scripts/redis-nodes.sh). tests/docs/README.md says how each kind of block
is run and how a block is marked when it is not a whole program. Besides the
blocks: every function declared in abi/redlock.h must appear in docs/abi.md's
table, every relative link of these pages must name a file that exists, and
README.md keeps to 400 lines with the two commands (scripts/demo.sh,
scripts/test.sh).

Quiet when all is well (one summary line); one line per failed block,
FILE:LINE and why (-v adds the block's output). Exits 1 on any failure.
"""

import argparse
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional

ROOT = Path(__file__).resolve().parents[2]
NODES_SCRIPT = ROOT / "scripts" / "redis-nodes.sh"
TIMEOUT = 60          # seconds, for one block
RUNNABLE = {"c", "python", "lua", "java", "php", "nginx", "sh", "console", "redis"}
SHOWN = {"text"}      # output, or formats: shown, never run
MARKERS = {"fragment", "setup"}
# Repository paths that a setup block may name (checked to exist).
REPO_PATH = re.compile(r"(?<![\w/.$-])\.?/?((?:scripts|bindings|tests|examples|tools|abi|docs|bench|core)"
                       r"/[\w./-]*\w)")


class Block(NamedTuple):
    path: Path
    line: int          # of the opening fence, 1-based
    info: str
    body: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    @property
    def lang(self) -> str:
        return self.info.split()[0] if self.info.split() else ""

    @property
    def marker(self) -> str:
        words = self.info.split()
        return words[1] if len(words) > 1 else ""


class Failure(Exception):
    def __init__(self, why: str, output: str = "") -> None:
        super().__init__(why)
        self.output = output


def blocks_of(path: Path) -> List[Block]:
    """The fenced blocks of a Markdown file (``` or ~~~, indented or not)."""
    blocks = []
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)(`{3,}|~{3,})(.*)$", lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = len(m.group(1)), m.group(2), m.group(3).strip()
        body = []
        j = i + 1
        while j < len(lines) and not re.match(rf"^\s*{re.escape(fence)}\s*$", lines[j]):
            body.append(lines[j][indent:] if lines[j][:indent].strip() == "" else lines[j])
            j += 1
        if j == len(lines):
            raise SystemExit(f"{path.relative_to(ROOT)}:{i + 1}: a code block that never ends")
        blocks.append(Block(path, i + 1, info, "\n".join(body) + "\n"))
        i = j + 1
    return blocks


def run(cmd, env, cwd, what: str, input_text: Optional[str] = None, timeout: int = TIMEOUT,
        first: bool = False) -> str:
    """Runs cmd; a Failure naming its output's last line (first: its first,
    where compilers and Lua put the error) when it fails."""
    try:
        p = subprocess.run(cmd, env=env, cwd=cwd, input=input_text, capture_output=True,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        raise Failure(f"{what}: no end within {timeout} s", out)
    out = p.stdout + p.stderr
    if p.returncode != 0:
        last = [line for line in out.splitlines() if line.strip()]
        said = (last[0] if first else last[-1]) if last else ""
        raise Failure(f"{what}: exit status {p.returncode}" + (f": {said}" if said else ""), out)
    return out


class Runner:
    def __init__(self, args: argparse.Namespace, tmp: Path) -> None:
        self.build = Path(args.build).resolve()
        self.tmp = tmp
        self.verbose = args.verbose
        self.jar = args.jar or os.environ.get("REDLOCK_JAR") or ""
        self.counts: Dict[str, int] = {}
        self.failures: List[str] = []
        self.env: Dict[str, str] = {}
        self.java_cp: Optional[str] = None

    # ---- the world the examples run in ----

    def start(self) -> None:
        nodes = subprocess.run([str(NODES_SCRIPT), "start", str(self.tmp / "nodes"), "5"],
                               check=True, capture_output=True, text=True).stdout.split()
        self.nodes = nodes
        prefix = self.tmp / "prefix"
        subprocess.run(["cmake", "--install", str(self.build), "--prefix", str(prefix)],
                       check=True, stdout=subprocess.DEVNULL)
        pcs = glob.glob(str(prefix / "lib*" / "**" / "redlock.pc"), recursive=True)
        if not pcs or not (prefix / "bin" / "redlock").exists():
            raise SystemExit("docs_examples: the install of the build has no redlock.pc or tool")
        env = {k: v for k, v in os.environ.items()
               if k not in ("LD_LIBRARY_PATH", "LUA_PATH", "LUA_CPATH", "PYTHONPATH")}
        env.update(REDLOCK_NODES=",".join(nodes),
                   PATH=f"{prefix / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}",
                   PKG_CONFIG_PATH=str(Path(pcs[0]).parent),
                   PYTHONPATH=str(self.build / "bindings" / "python"),
                   PYTHONDONTWRITEBYTECODE="1")
        self.env = env

    def stop(self) -> None:
        subprocess.run([str(NODES_SCRIPT), "stop", str(self.tmp / "nodes")],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    # ---- one block ----

    def count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1

    def fail(self, block: Block, why: str, output: str = "") -> None:
        self.failures.append(block.where)
        why = " ".join(re.sub(r"<[^>]*>", " ", why).split())
        # A line of the block's file is a line of the page.
        page = block.path.relative_to(ROOT)
        why = re.sub(r"\S*/block(\d+)\.\w+:(\d+)",
                     lambda m: f"{page}:{int(m.group(1)) + int(m.group(2))}", why)
        print(f"{block.where}: ```{block.info}: {why[:300]}", flush=True)
        if self.verbose and output:
            print("    " + output.rstrip().replace("\n", "\n    "), flush=True)

    def document(self, path: Path) -> None:
        work = self.tmp / "work" / str(path.relative_to(ROOT)).replace("/", "_")
        work.mkdir(parents=True)
        blocks = blocks_of(path)
        # Files first: a configuration may come before the module it loads.
        files = {b.marker: b for b in blocks if "." in b.marker}
        for block in files.values():
            if "/" not in block.marker:
                (work / block.marker).write_text(block.body)
        for block in blocks:
            try:
                kind = self.block(block, work)
                self.count(kind)
            except Failure as e:
                self.fail(block, str(e), e.output)
        for name, block in files.items():
            if not any(name in b.body for b in blocks if b is not block):
                self.fail(block, f"written to {name}, which no other block of the page uses")

    def block(self, block: Block, work: Path) -> str:
        lang, marker = block.lang, block.marker
        if marker == "fragment":
            return "fragments"
        if lang in SHOWN:
            return "shown"
        if lang not in RUNNABLE:
            raise Failure(f"no way to run ```{lang}: mark it ```{lang} fragment, or show it as ```text")
        if marker == "setup":
            if lang != "sh":
                raise Failure("only ```sh blocks may be marked setup")
            self.check_setup(block)
            return "setup"
        if marker and "." in marker:           # a file for another block
            if "/" in marker:
                raise Failure("a file name, not a path, please")
            return "files"
        if marker:
            raise Failure(f"unknown marker {marker!r} (known: {', '.join(sorted(MARKERS))}, "
                          "or a file name)")
        getattr(self, "run_" + lang)(block, work)
        return "run"

    def check_setup(self, block: Block) -> None:
        """Not run (they install, build or start things on the reader's
        machine, and tests of their own run those steps): the shell must
        parse them, and the repository paths they name must exist."""
        run(["bash", "-n"], self.env, ROOT, "bash -n", block.body)
        dirs = [ROOT] + [ROOT / m.group(1) for m in re.finditer(r"\bcd\s+([\w./-]+)", block.body)]
        for line in block.body.splitlines():
            line = re.sub(r"(^|\s)#.*", "", line)
            for m in REPO_PATH.finditer(line):
                p = m.group(1)
                if not any((d / p).exists() for d in dirs):
                    raise Failure(f"names {p}, which is not in the repository")

    # ---- the runners ----

    def run_sh(self, block: Block, work: Path) -> None:
        run(["bash", "-e", "-o", "pipefail", "-c", block.body], self.env, work, "sh")

    def run_console(self, block: Block, work: Path) -> None:
        commands = [line[2:] for line in block.body.splitlines() if line.startswith("$ ")]
        if not commands:
            raise Failure("a console block with no '$ ' command")
        for command in commands:
            run(["bash", "-e", "-o", "pipefail", "-c", command], self.env, work, command)

    def run_python(self, block: Block, work: Path) -> None:
        f = work / f"block{block.line}.py"
        f.write_text(block.body)
        run([sys.executable, str(f)], self.env, work, "python")

    def run_lua(self, block: Block, work: Path) -> None:
        f = work / f"block{block.line}.lua"
        f.write_text(block.body)
        for interpreter, sub in (("lua5.4", "5.4"), ("luajit", "luajit")):
            mod = self.build / "bindings" / "lua" / sub
            env = dict(self.env, LUA_PATH=f"{mod}/?.lua;{work}/?.lua;;", LUA_CPATH=f"{mod}/?.so;;")
            run([interpreter, str(f)], env, work, interpreter, first=True)

    def run_php(self, block: Block, work: Path) -> None:
        """With the extension and the PHP files of the install (the build's
        redlock.so, share/php/redlock/), as a reader's php.ini and
        include_path would have them: `require 'redlock/autoload.php'`."""
        prefix = self.tmp / "prefix"
        ext = glob.glob(str(prefix / "lib*" / "php" / "extensions" / "redlock.so"))
        if not ext:
            raise Failure("the install has no PHP extension (php-config missing when the build was configured)")
        f = work / f"block{block.line}.php"
        f.write_text(block.body)
        run(["php", "-d", f"extension={ext[0]}", "-d", f"include_path=.:{prefix / 'share' / 'php'}",
             str(f)], self.env, work, "php")

    def run_c(self, block: Block, work: Path) -> None:
        src = work / f"block{block.line}.c"
        src.write_text(block.body)
        exe = work / f"block{block.line}"
        flags = run(["pkg-config", "--cflags", "--libs", "redlock"], self.env, work, "pkg-config").split()
        libdir = run(["pkg-config", "--variable=libdir", "redlock"], self.env, work, "pkg-config").strip()
        run([os.environ.get("CC", "cc"), "-Wall", "-Werror", "-o", str(exe), str(src), *flags,
             f"-Wl,-rpath,{libdir}"], self.env, work, "cc", first=True)
        run([str(exe)], self.env, work, "the program")

    def java_classpath(self) -> str:
        if self.java_cp is not None:
            return self.java_cp
        if self.jar:
            if not Path(self.jar).exists():
                raise Failure(f"no jar {self.jar} (ctest -R java_binding makes it)")
            self.java_cp = self.jar
            return self.java_cp
        # No jar given: the binding's classes and this build's JNI library,
        # laid out as the jar holds them (a jar left in the build tree may be
        # older than the build).
        classes = self.tmp / "java-classes"
        sources = [str(p) for d in (ROOT / "bindings" / "java" / "src" / "main" / "java",
                                    self.build / "bindings" / "java" / "java")
                   for p in d.rglob("*.java")]
        run(["javac", "-nowarn", "-d", str(classes), *sources], self.env, ROOT, "javac (binding)",
            timeout=180)
        shutil.copytree(self.build / "bindings" / "java" / "native", classes / "native")
        self.java_cp = str(classes)
        return self.java_cp

    def run_java(self, block: Block, work: Path) -> None:
        m = re.search(r"public\s+(?:final\s+)?class\s+(\w+)", block.body)
        if not m:
            raise Failure("a ```java block needs a public class with main (or mark it fragment)")
        d = work / f"java{block.line}"
        d.mkdir()
        (d / f"{m.group(1)}.java").write_text(block.body)
        cp = self.java_classpath()
        run(["javac", "-cp", cp, "-d", str(d), str(d / f"{m.group(1)}.java")], self.env, d, "javac",
            first=True)
        run(["java", "-cp", f"{cp}:{d}", m.group(1)], self.env, d, "java")

    def run_redis(self, block: Block, work: Path) -> None:
        for line in block.body.splitlines():
            if not line.strip():
                continue
            for node in self.nodes:
                out = run(["redis-cli", "-u", node, *shlex.split(line)], self.env, work,
                          "redis-cli").strip()
                if out != "OK":
                    raise Failure(f"{node} answered {out!r}", out)

    def run_nginx(self, block: Block, work: Path) -> None:
        """A whole nginx configuration: nginx runs it with a few changes
        (tests/docs/README.md lists them) and every exact location of it
        must answer 2xx."""
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        modules = {Path(p).name: p for d in ("/usr/lib/nginx/modules", "/usr/share/nginx/modules")
                   for p in glob.glob(d + "/*.so")}
        conf = block.body
        for name in re.findall(r"load_module\s+\S*/([\w.]+);", conf):
            if name not in modules:
                raise Failure(f"nginx module {name} not found")
            conf = re.sub(rf"load_module\s+\S*/{re.escape(name)};", f"load_module {modules[name]};", conf)
        port = subprocess.run([str(NODES_SCRIPT), "free-port"], check=True, capture_output=True,
                              text=True).stdout.strip()
        conf = re.sub(r"\blisten\s+[^;]+;", f"listen 127.0.0.1:{port};", conf)
        luadir = self.build / "bindings" / "lua" / "luajit"
        if "lua_package_path" in conf:
            conf = re.sub(r'lua_package_path\s+"', f'lua_package_path "{work}/?.lua;{luadir}/?.lua;', conf)
        prefix = work / f"nginx{block.line}"
        prefix.mkdir()
        temp = "".join(f"  {kind}_temp_path {prefix}/{kind};\n"
                       for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        conf = re.sub(r"\bhttp\s*\{", "http {\n" + temp + f'  lua_package_cpath "{luadir}/?.so;;";\n'
                      + "  access_log off;\n", conf, count=1)
        (prefix / "nginx.conf").write_text(conf)
        directives = f"daemon off; pid {prefix}/nginx.pid;" + (" user root;" if os.getuid() == 0 else "")
        proc = subprocess.Popen([nginx, "-p", str(prefix), "-c", str(prefix / "nginx.conf"),
                                 "-e", str(prefix / "error.log"), "-g", directives],
                                env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            locations = re.findall(r"location\s+=\s+(\S+)\s*\{", conf)
            if not locations:
                raise Failure("no 'location = /path' to ask")
            deadline = time.monotonic() + 10
            for location in locations:
                while True:
                    try:
                        with urllib.request.urlopen(f"http://127.0.0.1:{port}{location}",
                                                    timeout=TIMEOUT) as r:
                            body = r.read().decode()
                        break
                    except urllib.error.HTTPError as e:
                        raise Failure(f"GET {location}: {e.code} {e.read().decode().strip()}",
                                      self.nginx_log(prefix))
                    except OSError:
                        if proc.poll() is not None or time.monotonic() > deadline:
                            raise Failure("nginx did not start: " + (proc.stderr.read() or "").strip(),
                                          self.nginx_log(prefix))
                        time.sleep(0.05)
                if self.verbose:
                    print(f"    GET {location}: {body.strip()}")
            errors = [line for line in self.nginx_log(prefix).splitlines()
                      if re.search(r"\[(error|crit|alert|emerg)\]", line)]
            if errors:
                raise Failure("nginx logged: " + errors[0], self.nginx_log(prefix))
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    @staticmethod
    def nginx_log(prefix: Path) -> str:
        log = prefix / "error.log"
        return log.read_text() if log.exists() else ""


def check_abi_page(failures: List[str]) -> None:
    """Every function of the public header is in the table of docs/abi.md's
    "Every function" section, called as `name(...)`."""
    header = (ROOT / "abi" / "redlock.h").read_text()
    names = re.findall(r"REDLOCK_API\b[^;]*?\b(redlock_\w+)\s*\(", header)
    page = (ROOT / "docs" / "abi.md").read_text()
    section = page.split("## Every function", 1)[-1].split("\n## ", 1)[0]
    listed = set(re.findall(r"`(redlock_\w+)\(", "\n".join(
        line.split("|")[1] for line in section.splitlines() if line.startswith("| "))))
    missing = [n for n in names if n not in listed]
    if not names:
        failures.append("abi/redlock.h")
        print("abi/redlock.h: no REDLOCK_API function found")
    for name in missing:
        failures.append("docs/abi.md")
        print(f"docs/abi.md:1: {name} is declared in abi/redlock.h but not in the table of "
              "'Every function'")


def check_readme(failures: List[str]) -> None:
    """The front door stays one: a few hundred lines, with the two commands."""
    lines = (ROOT / "README.md").read_text().splitlines()
    if len(lines) > 400:
        failures.append("README.md")
        print(f"README.md:{len(lines)}: {len(lines)} lines; the README keeps to 400 (move "
              "reference material to docs/)")
    for command in ("scripts/demo.sh", "scripts/test.sh"):
        if not any(line.startswith(command + " ") for line in lines):
            failures.append("README.md")
            print(f"README.md:1: no line starting with the command {command}")


def anchors(path: Path) -> set:
    """The anchors GitHub gives a Markdown file's headings."""
    found = set()
    for line in path.read_text().splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*$", line)
        if m:
            slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
            found.add(slug)
    return found


def check_links(path: Path, failures: List[str]) -> None:
    """Relative links name files that exist, and their headings' anchors."""
    text = path.read_text()
    for n, line in enumerate(text.splitlines(), 1):
        for target in re.findall(r"\]\(([^)\s]+)\)", line):
            if re.match(r"^[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            dest = (path.parent / file) if file else path
            where = f"{path.relative_to(ROOT)}:{n}"
            if not dest.exists():
                failures.append(where)
                print(f"{where}: link to {file}, which does not exist")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                failures.append(where)
                print(f"{where}: link to {target}, which has no heading '#{anchor}'")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=os.environ.get("REDLOCK_BUILD", str(ROOT / "build")),
                        help="the CMake build directory (with -DREDLOCK_BUILD_BINDINGS=ON)")
    parser.add_argument("--jar", help="the Java binding's jar (default: $REDLOCK_JAR, else the "
                        "binding's classes are compiled against this build)")
    parser.add_argument("-v", "--verbose", action="store_true", help="show failed blocks' output")
    parser.add_argument("files", nargs="*", help="Markdown files (default: all of them)")
    args = parser.parse_args()

    if args.files:
        files = [Path(f).resolve() for f in args.files]
    else:
        files = ([ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
                 + sorted((ROOT / "bindings").glob("*/README.md")))
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="docs-examples-") as tmp:
        runner = Runner(args, Path(tmp))
        check_abi_page(runner.failures)
        if not args.files:
            check_readme(runner.failures)
        for f in files:
            check_links(f, runner.failures)
        runner.start()
        try:
            for f in files:
                runner.document(f)
        finally:
            runner.stop()
    c = runner.counts
    summary = (f"{c.get('run', 0)} blocks run, {c.get('fragments', 0)} fragments skipped, "
               f"{c.get('setup', 0)} setup blocks checked, {c.get('files', 0)} files written, "
               f"{c.get('shown', 0)} shown only, in {len(files)} pages "
               f"({time.monotonic() - started:.0f} s)")
    if runner.failures:
        print(f"docs_examples: FAILED: {len(runner.failures)} failures; {summary}")
        return 1
    print(f"docs_examples: ok: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
