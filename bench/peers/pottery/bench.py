"""Drives pottery's Redlock (Python) through the bench cycle (bench/README.md).
acquire(blocking=False) makes one attempt: no retries. pottery stores the
lock under "redlock:" + the resource name."""

import harness
from pottery import Redlock
from redis import Redis


def main():
    args = harness.parse_args()
    if args.keys != 1:
        raise SystemExit("pottery locks one resource at a time")
    masters = {Redis.from_url(uri) for uri in args.nodes}
    lock = Redlock(key=args.resources[0], masters=masters, auto_release_time=args.lease / 1000.0)

    def acquire():
        if not lock.acquire(blocking=False):
            raise RuntimeError("not acquired")
        return lock

    harness.measure("pottery", args, acquire, lambda held: held.release())


if __name__ == "__main__":
    main()
