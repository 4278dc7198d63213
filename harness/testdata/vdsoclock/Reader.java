import java.nio.channels.Selector;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * Prints, every 20 ms, true time, then what the JVM's clocks read:
 * System.currentTimeMillis() and System.nanoTime(), in nanoseconds, then
 * true time again: the clocks were read between the two. Java
 * has no raw system call, so true time is the modification time the kernel
 * stamps on a file it writes (its own clock, coarse to a few milliseconds:
 * no patch of the vDSO reaches it). It waits in Selector.select, a relative
 * epoll timeout: Thread.sleep parks until an absolute deadline on the
 * monotonic clock, which a skewed monotonic clock would stretch.
 */
public class Reader {
    public static void main(String[] args) throws Exception {
        Selector s = Selector.open();
        Path stamp = Files.createTempFile("reader", ".stamp");
        byte[] one = {0};
        for (;;) {
            Files.write(stamp, one);
            long truth = Files.getLastModifiedTime(stamp).to(TimeUnit.NANOSECONDS);
            long rt = System.currentTimeMillis() * 1_000_000L, mono = System.nanoTime();
            Files.write(stamp, one);
            long end = Files.getLastModifiedTime(stamp).to(TimeUnit.NANOSECONDS);
            System.out.println(truth + " " + rt + " " + mono + " " + end);
            s.select(20);
        }
    }
}
