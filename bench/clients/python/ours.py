"""libredlock from Python (the redlock package) through the bench cycle."""

import harness
import redlock


def main():
    args = harness.parse_args()
    lease = args.lease / 1000.0
    with redlock.Redlock(args.nodes, node_timeout_ms=args.lease // 20) as client:
        lock = (client.get_lock(args.resources[0]) if args.keys == 1
                else client.get_multi_lock(*args.resources))

        def acquire():
            if not lock.try_lock(wait=0, lease=lease):
                raise RuntimeError("not acquired")
            return lock

        harness.measure("ours-python", args, acquire, lambda held: held.unlock())


if __name__ == "__main__":
    main()
