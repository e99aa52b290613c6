import io.redlock.RLock;
import io.redlock.Redlock;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

/**
 * One contender of the cross-language tests: java -cp redlock.jar Contender.java MODE NODES NAMES.
 * NODES and NAMES are comma-separated; several names make a multi-lock. MODE "try": one attempt,
 * released at once when taken; "hold": one attempt, held until a line arrives on standard input.
 * Prints "acquired" then "released", or "refused".
 */
public class Contender {
    public static void main(String[] args) throws Exception {
        String mode = args[0];
        String[] names = args[2].split(",");
        try (Redlock client = Redlock.create(args[1].split(","))) {
            RLock lock = names.length == 1 ? client.getLock(names[0]) : client.getMultiLock(names);
            if (!lock.tryLock(0, 30, TimeUnit.SECONDS)) {
                System.out.println("refused");
                return;
            }
            System.out.println("acquired");
            System.out.flush();
            if (mode.equals("hold")) {
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
            }
            lock.unlock();
            System.out.println("released");
        }
    }
}
