import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.KeeperException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A splitbrain node on Apache Curator's LeaderLatch, used as Curator's
 * documentation shows: a CuratorFramework with a retry policy and session
 * and connection timeouts, a listener on its connection's state, one
 * latch per node, and hasLeadership() as the node's belief. It serves the
 * node API (docs/contract.md) with the JDK's HttpServer.
 *
 * <p>The fencing token is the sequence number ZooKeeper gave the latch's
 * znode: the parent's count of child changes when the znode was made, a
 * count that only grows (the parent is made persistent here, so it is
 * never removed and never counts again from 0). The latch leads with the
 * lowest live znode, so a new leader's znode is either one that lived
 * beside the old leader's, and so higher, or one made after it: every
 * new leadership has a higher token, and a node that makes a new znode
 * (Curator does on every reconnection) leads, if ever, with a new one.
 */
public final class LatchNode {
    private static final String LATCH = "/splitbrain/latch";

    private final String name;
    private final URI resource;
    private final LeaderLatch latch;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();

    private LatchNode(String name, URI resource, LeaderLatch latch) {
        this.name = name;
        this.resource = resource;
        this.latch = latch;
    }

    public static void main(String[] args) throws Exception {
        // Before the first logger: times on every line, and the JDK's
        // server sends its answers at once rather than after the client's
        // delayed ACK (Nagle's algorithm).
        System.setProperty("org.slf4j.simpleLogger.showDateTime", "true");
        System.setProperty("org.slf4j.simpleLogger.dateTimeFormat", "HH:mm:ss.SSS");
        System.setProperty("sun.net.httpserver.nodelay", "true");
        Logger log = LoggerFactory.getLogger("latch");

        String name = env("SPLITBRAIN_NODE", null);
        String addr = env("SPLITBRAIN_ADDR", ":7070");
        URI resource = URI.create(env("SPLITBRAIN_RESOURCE", null) + "/write");
        int sessionMs = millis(env("CURATOR_SESSION_TIMEOUT", "2s"));
        int connectionMs = millis(env("CURATOR_CONNECTION_TIMEOUT", "1s"));

        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(env("SPLITBRAIN_SERVICES", null))
                .sessionTimeoutMs(sessionMs)
                .connectionTimeoutMs(connectionMs)
                // Each operation is retried up to 10 times, 100 ms to 1 s
                // apart; the latch itself starts again on every reconnection.
                .retryPolicy(new ExponentialBackoffRetry(100, 10, 1000))
                .build();
        client.getConnectionStateListenable().addListener((c, state) -> log.info("{}: connection {}", name, state));
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("no ZooKeeper server answered within 30 s: " + env("SPLITBRAIN_SERVICES", null));
        }
        try {
            client.create().creatingParentsIfNeeded().forPath(LATCH);
        } catch (KeeperException.NodeExistsException made) {
            // Another node made it first.
        }

        LeaderLatch latch = new LeaderLatch(client, LATCH, name);
        latch.addListener(new LeaderLatchListener() {
            @Override
            public void isLeader() {
                log.info("{}: leading with {}", name, latch.getOurPath());
            }

            @Override
            public void notLeader() {
                log.info("{}: not leading", name);
            }
        });
        latch.start();

        LatchNode node = new LatchNode(name, resource, latch);
        HttpServer server = HttpServer.create(new InetSocketAddress(Integer.parseInt(addr.substring(addr.lastIndexOf(':') + 1))), 64);
        server.createContext("/", node::serve);
        server.setExecutor(Executors.newCachedThreadPool());
        server.start();
        log.info("{}: serving the node API on {}", name, addr);
    }

    /** A leadership: whether the latch leads, and with which token. */
    private record Belief(boolean leader, long token) {
    }

    /**
     * The latch's belief, now. Its znode's path is read on both sides of
     * hasLeadership(): the latch makes a new znode on reconnection after
     * giving up leadership, so a path that did not change is the one the
     * leadership is of.
     */
    private Belief belief() {
        while (true) {
            String before = latch.getOurPath();
            boolean leader = latch.hasLeadership();
            String after = latch.getOurPath();
            if (before != null && before.equals(after)) {
                return leader ? new Belief(true, sequence(after)) : new Belief(false, 0);
            }
            if (!leader) {
                return new Belief(false, 0);
            }
        }
    }

    /** The token of a latch znode: the sequence number ZooKeeper appended to its name (ten digits, from 0), plus one, since a token is above 0. */
    static long sequence(String path) {
        return Long.parseLong(path.substring(path.length() - 10)) + 1;
    }

    private void serve(HttpExchange ex) throws IOException {
        try (ex) {
            String route = ex.getRequestMethod() + " " + ex.getRequestURI().getPath();
            switch (route) {
                case "GET /health" -> reply(ex, 200, "{}");
                case "GET /leader" -> {
                    Belief b = belief();
                    reply(ex, 200, b.leader()
                            ? "{\"node\":" + Json.quote(name) + ",\"leader\":true,\"token\":" + b.token() + ",\"leader_id\":" + Json.quote(name) + "}"
                            : "{\"node\":" + Json.quote(name) + ",\"leader\":false}");
                }
                case "POST /write" -> write(ex);
                default -> reply(ex, 404, "{\"error\":\"not found\"}");
            }
        } catch (IOException hungUp) {
            // A client that hung up (a poll given up on, a write that timed
            // out: its write was made all the same) is no error of the node's.
        }
    }

    /** POST /write: the write to the resource with the current token, if leading. */
    private void write(HttpExchange ex) throws IOException {
        String key;
        String value;
        try {
            Map<String, Object> req = Json.object(new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
            key = (String) req.get("key");
            value = req.get("value") == null ? "" : (String) req.get("value");
        } catch (IllegalArgumentException | ClassCastException bad) {
            key = null;
            value = null;
        }
        if (key == null || key.isEmpty()) {
            reply(ex, 400, "{\"error\":\"bad write request\"}");
            return;
        }
        Belief b = belief();
        if (!b.leader()) {
            reply(ex, 409, "{\"error\":\"not-leader\"}");
            return;
        }
        String body = "{\"key\":" + Json.quote(key) + ",\"value\":" + Json.quote(value) + ",\"token\":" + b.token() + ",\"node\":" + Json.quote(name) + "}";
        HttpRequest post = HttpRequest.newBuilder(resource).timeout(Duration.ofSeconds(2))
                .POST(HttpRequest.BodyPublishers.ofString(body)).build();
        try {
            HttpResponse<String> res = http.send(post, HttpResponse.BodyHandlers.ofString());
            Map<String, Object> answer = Json.object(res.body());
            switch (res.statusCode()) {
                case 200 -> reply(ex, 200, "{\"ok\":true,\"token\":" + b.token() + ",\"seq\":" + answer.get("seq") + "}");
                case 412 -> reply(ex, 412, "{\"error\":\"fenced\",\"token\":" + b.token() + ",\"current\":" + answer.get("current") + "}");
                default -> reply(ex, 503, "{\"error\":" + Json.quote("the resource answered " + res.statusCode()) + "}");
            }
        } catch (IOException | IllegalArgumentException e) {
            reply(ex, 503, "{\"error\":" + Json.quote("the resource: " + e) + "}");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            reply(ex, 503, "{\"error\":\"interrupted\"}");
        }
    }

    private static void reply(HttpExchange ex, int status, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", "application/json");
        ex.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(bytes);
        }
    }

    private static String env(String key, String fallback) {
        String v = System.getenv(key);
        if (v != null && !v.isEmpty()) {
            return v;
        }
        if (fallback == null) {
            throw new IllegalStateException(key + " is not set");
        }
        return fallback;
    }

    /** A duration written as Go writes one, in ms or s ("500ms", "2s"), in milliseconds. */
    static int millis(String d) {
        if (d.endsWith("ms")) {
            return Integer.parseInt(d.substring(0, d.length() - 2));
        }
        if (d.endsWith("s")) {
            return (int) Math.round(Double.parseDouble(d.substring(0, d.length() - 1)) * 1000);
        }
        throw new IllegalArgumentException("not a duration in ms or s: " + d);
    }
}
