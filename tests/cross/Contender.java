import io.redlock.ClientClosedException;
import io.redlock.LockNotHeldException;
import io.redlock.RLock;
import io.redlock.RPermitExpirableSemaphore;
import io.redlock.Redlock;
import io.redlock.RedlockException;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * One contender of the cross-language tests: java -cp redlock.jar Contender.java MODE NODES NAMES
 * [KIND]. NODES and NAMES are comma-separated; several names make a multi-lock. KIND (one name):
 * "plain" (the default), "read" or "write" (a read-write lock's), "fair", or "permits=N" (a permit
 * of a semaphore of N). MODE "try": one attempt,
 * released at once when taken; "hold": one attempt, held until a line arrives on standard input.
 * Prints "acquired" then "released", or "refused". MODE "rules": the scenarios of the rules every
 * language follows (docs/locks.md) on resources named after NAMES' first one; prints one line of
 * observations per rule, which test_parity.py compares across languages. MODE "messages": the
 * same bad inputs as every language's; prints each case and the library's message for it.
 */
public class Contender {
    public static void main(String[] args) throws Exception {
        String mode = args[0];
        String[] names = args[2].split(",");
        if (mode.equals("rules")) {
            rules(args[1].split(","), names[0]);
            return;
        }
        if (mode.equals("messages")) {
            messages(args[1].split(","), names[0]);
            return;
        }
        String kind = args.length > 3 ? args[3] : "plain";
        try (Redlock client = Redlock.create(args[1].split(","))) {
            if (kind.startsWith("permits=")) {
                RPermitExpirableSemaphore semaphore = client.getPermitExpirableSemaphore(names[0],
                        Integer.parseInt(kind.substring("permits=".length())));
                String id = semaphore.tryAcquire(0, 30, TimeUnit.SECONDS);
                if (id == null) {
                    System.out.println("refused");
                    return;
                }
                held(mode);
                semaphore.release(id);
                System.out.println("released");
                return;
            }
            RLock lock = kind.equals("read") ? client.getReadWriteLock(names[0]).readLock()
                    : kind.equals("write") ? client.getReadWriteLock(names[0]).writeLock()
                    : kind.equals("fair") ? client.getFairLock(names[0])
                    : names.length == 1 ? client.getLock(names[0]) : client.getMultiLock(names);
            if (!lock.tryLock(0, 30, TimeUnit.SECONDS)) {
                System.out.println("refused");
                return;
            }
            held(mode);
            lock.unlock();
            System.out.println("released");
        }
    }

    /** Says the lock is held; in MODE "hold", keeps it until a line arrives. */
    private static void held(String mode) throws Exception {
        System.out.println("acquired");
        System.out.flush();
        if (mode.equals("hold")) {
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
        }
    }

    private static String yes(boolean cond) {
        return cond ? "yes" : "no";
    }

    /** A call's outcome as one word: "ok", or the name of the library's error. */
    private static String word(Runnable call) {
        try {
            call.run();
            return "ok";
        } catch (LockNotHeldException e) {
            return "notheld";
        } catch (RedlockException e) {
            return "error";
        }
    }

    /** "closed" when call throws ClientClosedException, else "open". */
    private static String closed(Runnable call) {
        try {
            call.run();
            return "open";
        } catch (ClientClosedException e) {
            return "closed";
        }
    }

    /** A call that may throw anything. */
    private interface Call {
        void run() throws Exception;
    }

    /** The message of what call throws. */
    private static String message(Call call) {
        try {
            call.run();
            return "accepted";
        } catch (Exception e) {
            return e.getMessage();
        }
    }

    private static void messages(String[] nodes, String name) {
        try (Redlock c = Redlock.create(nodes)) {
            RLock lock = c.getLock(name);
            System.out.println("negative-lease "
                    + message(() -> lock.tryLock(0, -1000, TimeUnit.MILLISECONDS)));
            System.out.println("zero-lease " + message(() -> lock.tryLock(0, 0, TimeUnit.SECONDS)));
            System.out.println("long-lease " + message(() -> lock.tryLock(0, 30, TimeUnit.DAYS)));
            System.out.println("negative-wait "
                    + message(() -> lock.tryLock(-1, 1, TimeUnit.SECONDS)));
            System.out.println("zero-permits "
                    + message(() -> c.getPermitExpirableSemaphore("s", 0)));
            System.out.println("empty-uri " + message(() -> Redlock.splitNodes(" ,redis://a")));
        }
    }

    private static void rules(String[] nodes, String base) throws Exception {
        try (Redlock c = Redlock.create(List.of(nodes), Map.of("watchdog_lease_ms", "900"));
                Redlock other = Redlock.create(nodes)) {
            RLock kept = c.getLock(base + ":kept");
            kept.lock();
            boolean again = kept.tryLock(1000, 150, TimeUnit.MILLISECONDS);
            int holds = kept.getHoldCount();
            long ttl = kept.remainTimeToLive();
            RLock keptLease = c.getLock(base + ":kept-lease");
            if (!keptLease.tryLock(0, RLock.KEPT, TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException("not acquired");
            }
            Thread.sleep(1200);
            System.out.printf("reentry-kept again=%s holds=%d ttl_kept=%s held=%s lost=%s"
                    + " unlock=%s,%s%n", yes(again), holds, yes(ttl > 150),
                    yes(kept.remainingValidity(TimeUnit.MILLISECONDS) > 0), yes(kept.isLost()),
                    word(kept::unlock), word(kept::unlock));
            System.out.printf("kept-lease held=%s lost=%s unlock=%s%n",
                    yes(keptLease.remainingValidity(TimeUnit.MILLISECONDS) > 0),
                    yes(keptLease.isLost()), word(keptLease::unlock));

            RLock leased = c.getLock(base + ":leased");
            if (!leased.tryLock(0, 300, TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException("not acquired");
            }
            again = leased.tryLock();
            holds = leased.getHoldCount();
            ttl = leased.remainTimeToLive();
            Thread.sleep(450);
            boolean lost = leased.isLost();
            System.out.printf("reentry-lease again=%s holds=%d ttl_first=%s lost=%s"
                    + " unlock=%s,%s%n", yes(again), holds, yes(ttl <= 300), yes(lost),
                    word(leased::unlock), word(leased::unlock));

            RLock fresh = c.getLock(base + ":afresh");
            if (!fresh.tryLock(0, 300, TimeUnit.MILLISECONDS)
                    || !fresh.tryLock(0, 300, TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException("not acquired");
            }
            Thread.sleep(450);
            lost = fresh.isLost();
            String afresh = fresh.tryLock() ? "ok" : "locked";
            System.out.printf("afresh lost=%s again=%s holds=%d lost=%s unlock=%s%n", yes(lost),
                    afresh, fresh.getHoldCount(), yes(fresh.isLost()), word(fresh::unlock));

            RLock holder = other.getLock(base + ":wait");
            if (!holder.tryLock(0, 400, TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException("not acquired");
            }
            RLock waiter = c.getLock(base + ":wait");
            long started = System.nanoTime();
            String tried = waiter.tryLock() ? "ok" : "locked";
            boolean once = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started) < 300;
            String locked = word(() -> waiter.lock(5000, TimeUnit.MILLISECONDS));
            boolean waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started) >= 300;
            System.out.printf("wait try=%s once=%s lock=%s waited=%s%n", tried, yes(once), locked,
                    yes(waited));
            waiter.unlock();

            RLock multi = c.getMultiLock(base + ":ma", base + ":mb", base + ":mc");
            boolean free = !multi.isLocked();
            RLock b = other.getLock(base + ":mb");
            RLock d = other.getLock(base + ":mc");
            if (!b.tryLock(0, 3000, TimeUnit.MILLISECONDS)
                    || !d.tryLock(0, 8000, TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException("not acquired");
            }
            long left = multi.remainTimeToLive();
            System.out.printf("multi free=%s locked=%s longest=%s%n", yes(free),
                    yes(multi.isLocked()), yes(left > 7000 && left <= 8000));
            b.unlock();
            d.unlock();

            Redlock closing = Redlock.create(nodes);
            RLock held = closing.getLock(base + ":closed");
            if (!held.tryLock(0, 10, TimeUnit.SECONDS)) {
                throw new IllegalStateException("not acquired");
            }
            closing.close();
            boolean released = !other.getLock(base + ":closed").isLocked();
            System.out.printf("closed released=%s get=%s try=%s unlock=%s%n", yes(released),
                    closed(() -> closing.getLock("x")), closed(held::tryLock),
                    closed(held::unlock));
        }
    }
}
