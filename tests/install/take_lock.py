"""take_lock.py NAME NODE... - with the installed redlock package (and only
it: run from outside the source tree), takes the lock NAME, sees a second
client refused, releases it, and sees the second client take it."""
import importlib.metadata
import sys

import redlock

name, nodes = sys.argv[1], sys.argv[2:]
assert "site-packages" in redlock.__file__, redlock.__file__
installed = importlib.metadata.version("redlock-native")
assert installed == redlock.__version__, (installed, redlock.__version__)
with redlock.Redlock(nodes) as client, redlock.Redlock(nodes) as rival:
    lock = client.get_lock(name)
    assert lock.try_lock(wait=0, lease=10.0)
    assert lock.validity > 0
    assert not rival.get_lock(name).try_lock(wait=0, lease=10.0)
    lock.unlock()
    other = rival.get_lock(name)
    assert other.try_lock(wait=0, lease=10.0)
    other.unlock()
print("installed redlock-native", installed, "takes and releases locks")
