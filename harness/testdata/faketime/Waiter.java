import java.time.Instant;

/**
 * Waits 100 ms at a time on the monotonic clock, as a JVM service does: a
 * sleep and a monitor wait that times out. After each wait it prints a
 * line: what it was, how long it took and when it ended on the monotonic
 * clock (System.nanoTime), what the wall clock read then, and the
 * monotonic clock again after it, all in nanoseconds.
 */
public class Waiter {
    public static void main(String[] args) throws InterruptedException {
        Object neverNotified = new Object();
        for (int i = 0; ; i++) {
            long begun = System.nanoTime();
            String what = i % 2 == 0 ? "sleep" : "wait";
            if (i % 2 == 0) {
                Thread.sleep(100);
            } else {
                synchronized (neverNotified) {
                    neverNotified.wait(100);
                }
            }
            long ended = System.nanoTime();
            Instant wall = Instant.now();
            long after = System.nanoTime();
            System.out.println(what + " " + (ended - begun) + " " + ended + " " + (wall.getEpochSecond() * 1_000_000_000L + wall.getNano()) + " " + after);
            System.out.flush();
        }
    }
}
