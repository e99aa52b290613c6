import io.redlock.RLock;
import io.redlock.Redlock;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

/**
 * TakeLock NAME NODE... - with the redlock jar on the class path, takes the lock NAME, sees a
 * second client refused, releases it, and sees the second client take it.
 */
public class TakeLock {
    public static void main(String[] args) throws Exception {
        String name = args[0];
        String[] nodes = Arrays.copyOfRange(args, 1, args.length);
        try (Redlock client = Redlock.create(nodes); Redlock rival = Redlock.create(nodes)) {
            RLock lock = client.getLock(name);
            check(lock.tryLock(0, 10, TimeUnit.SECONDS), "the lock was not taken");
            check(lock.remainingValidity(TimeUnit.MILLISECONDS) > 0, "no validity");
            check(!rival.getLock(name).tryLock(0, 10, TimeUnit.SECONDS), "the rival took it too");
            lock.unlock();
            RLock other = rival.getLock(name);
            check(other.tryLock(0, 10, TimeUnit.SECONDS), "the rival could not take it after");
            other.unlock();
        }
        System.out.println("the redlock jar takes and releases locks (Java "
                           + System.getProperty("java.version") + ", " + System.getProperty("os.arch") + ")");
    }

    private static void check(boolean condition, String message) {
        if (!condition) {
            throw new AssertionError(message);
        }
    }
}
