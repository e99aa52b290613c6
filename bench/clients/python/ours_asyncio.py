"""redlock.asyncio (the engine driven by asyncio's own loop) through the
bench cycle; --loop uvloop runs it on uvloop."""


import harness
import redlock.asyncio


async def run(args):
    lease = args.lease / 1000.0
    async with redlock.asyncio.Redlock(args.nodes, node_timeout_ms=args.lease // 20) as client:
        lock = (client.get_lock(args.resources[0]) if args.keys == 1
                else client.get_multi_lock(*args.resources))

        async def acquire():
            if not await lock.try_lock(wait=0, lease=lease):
                raise RuntimeError("not acquired")
            return lock

        async def release(held):
            await held.unlock()

        await harness.measure_async(f"ours-python-{args.loop}", args, acquire, release)


if __name__ == "__main__":
    harness.run_on_loop(run)
