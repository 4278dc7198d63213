import java.nio.channels.Selector;

/**
 * Prints, every 20 ms, what the JVM's clocks read: System.currentTimeMillis()
 * and System.nanoTime(), in nanoseconds. It waits in Selector.select, a
 * relative epoll timeout: Thread.sleep parks until an absolute deadline on
 * the monotonic clock, which a skewed monotonic clock would stretch.
 */
public class Reader {
    public static void main(String[] args) throws Exception {
        Selector s = Selector.open();
        for (;;) {
            System.out.println(System.currentTimeMillis() * 1_000_000L + " " + System.nanoTime());
            s.select(20);
        }
    }
}
