// Drives node-redlock (v5) through the bench's lock+unlock cycle and prints
// the figures as the other bench clients do (bench/README.md). One attempt
// per lock (retryCount 0): no retries. --keys K takes K resources in one lock
// (node-redlock runs one script per node for all of them).
"use strict";
const { parseArgs } = require("node:util");
const Redis = require("ioredis");
const { default: Redlock } = require("redlock");

const { values: opt } = parseArgs({
  options: {
    nodes: { type: "string" },
    cycles: { type: "string", default: "1000" },
    warmup: { type: "string", default: "100" },
    lease: { type: "string", default: "10000" },
    keys: { type: "string", default: "1" },
    prefix: { type: "string", default: "bench" },
  },
});
if (!opt.nodes) {
  console.error("node-redlock bench: --nodes URI[,URI...] [--cycles N] [--warmup N] [--lease MS] [--keys K]");
  process.exit(64);
}

async function main() {
  const clients = opt.nodes.split(",").map((uri) => new Redis(uri));
  const redlock = new Redlock(clients, { retryCount: 0 });
  const lease = Number(opt.lease);
  const resources = Array.from({ length: Number(opt.keys) }, (_, i) => `${opt.prefix}:${i}`);

  async function cycle() {
    const t0 = process.hrtime.bigint();
    const lock = await redlock.acquire(resources, lease);
    const t1 = process.hrtime.bigint();
    await lock.release();
    return [Number(t1 - t0), Number(process.hrtime.bigint() - t0)];
  }

  for (let i = 0; i < Number(opt.warmup); i++) await cycle().catch(() => {});
  const out = {
    client: "node-redlock", mode: "cycle", n: clients.length, keys: resources.length,
    threads: 1, ok: 0, failed: 0, lock_ns: [], cycle_ns: [],
  };
  const cpu0 = process.cpuUsage();
  const w0 = process.hrtime.bigint();
  for (let i = 0; i < Number(opt.cycles); i++) {
    try {
      const [lock, total] = await cycle();
      out.lock_ns.push(lock);
      out.cycle_ns.push(total);
      out.ok++;
    } catch (e) {
      out.failed++;
    }
  }
  out.wall_s = Number(process.hrtime.bigint() - w0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  out.cpu_user_us = cpu.user;
  out.cpu_sys_us = cpu.system;
  console.log(JSON.stringify(out));
  await Promise.all(clients.map((c) => c.quit()));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
