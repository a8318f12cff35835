// The idle-cost bench's Curator holder (bench/idle_cost.py): one
// CuratorFramework (one ZooKeeper session) leading E elections on distinct
// paths with LeaderLatch, then doing nothing until stdin ends.
//
//   CuratorIdle --connect HOSTS --path P --elections E --session-timeout-ms T
//
// Prints "READY E join_ms=J rss_kib=R rss0_kib=R0" once every latch leads
// (J from the first start(), R and R0 the resident set then and before the
// first latch), "LOST i" for a latch that no longer leads when stdin ends,
// and "TEARDOWN ms=M" once every latch is closed and the client too (the
// scale part of ./dev bench reads the figures, issue 35).
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorIdle {
    static long rssKib() {
        try {
            for (String l : Files.readAllLines(Paths.get("/proc/self/status")))
                if (l.startsWith("VmRSS:")) return Long.parseLong(l.replaceAll("[^0-9]", ""));
        } catch (Exception e) {
        }
        return -1;
    }

    public static void main(String[] args) throws Exception {
        String connect = null, path = "/idle";
        int elections = 1, sessionMs = 10000;
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--connect": connect = args[i + 1]; break;
                case "--path": path = args[i + 1]; break;
                case "--elections": elections = Integer.parseInt(args[i + 1]); break;
                case "--session-timeout-ms": sessionMs = Integer.parseInt(args[i + 1]); break;
                default: throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        CuratorFramework cf = CuratorFrameworkFactory.builder().connectString(connect)
                .sessionTimeoutMs(sessionMs).connectionTimeoutMs(15000)
                .retryPolicy(new ExponentialBackoffRetry(100, 5)).build();
        cf.start();
        if (!cf.blockUntilConnected(30, TimeUnit.SECONDS)) throw new IllegalStateException("no connection");
        List<LeaderLatch> latches = new ArrayList<>();
        long rss0 = rssKib(), t0 = System.nanoTime();
        for (int i = 0; i < elections; i++) {
            LeaderLatch l = new LeaderLatch(cf, path + "/e" + i, "idle");
            l.start();
            latches.add(l);
        }
        for (int i = 0; i < elections; i++) {
            if (!latches.get(i).await(60, TimeUnit.SECONDS))
                throw new IllegalStateException("latch e" + i + " never led");
        }
        System.out.println("READY " + elections + " join_ms=" + (System.nanoTime() - t0) / 1000000
                + " rss_kib=" + rssKib() + " rss0_kib=" + rss0);
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        while (in.readLine() != null) {
        }
        int lost = 0;
        for (int i = 0; i < elections; i++) {
            if (!latches.get(i).hasLeadership()) {
                System.out.println("LOST " + i);
                lost++;
            }
        }
        System.out.flush();
        long t1 = System.nanoTime();
        for (LeaderLatch l : latches) l.close();
        cf.close();
        System.out.println("TEARDOWN ms=" + (System.nanoTime() - t1) / 1000000);
        System.out.flush();
        System.exit(lost == 0 ? 0 : 3);
    }
}
