// The Java candidate of the cross-language test (tests/bindings/test_crosslang.py),
// on the Java binding. Same request/response protocol as
// bindings/rust/zkelect/examples/candidate.rs:
//
//   java -cp zkelect.jar:. Candidate HOSTS PATH ID [KEY=VALUE...]   ->  READY
//   join | resign | await MS | leader? | who | events MS | counters | quit

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.zkelect.Client;
import org.zkelect.Elector;
import org.zkelect.Event;
import org.zkelect.ZkelectException;

public final class Candidate {
    private static String describe(Event ev) {
        switch (ev.type) {
            case ELECTED:
                return "EVENT ELECTED " + ev.token;
            case DEPOSED:
                return "EVENT DEPOSED " + ev.reason.name().toLowerCase();
            case FOLLOWING:
                return "EVENT FOLLOWING " + ev.id;
            case WARNING:
                return "EVENT WARNING " + ev.message;
            default:
                return "EVENT " + ev.type.name();
        }
    }

    private static String run(Client client, Elector e, String cmd, int ms) throws InterruptedException {
        switch (cmd) {
            case "counters": {
                StringBuilder out = new StringBuilder("COUNTERS");
                new java.util.TreeMap<>(client.counters()).forEach((k, v) -> out.append(' ').append(k).append('=').append(v));
                return out.toString();
            }
            case "join":
                e.volunteer();
                return "OK";
            case "resign":
                e.resign();
                return "OK";
            case "await":
                return e.awaitLeader(ms) ? "LEADER " + e.fencingToken() : "TIMEOUT";
            case "leader?":
                return e.isLeader() ? "IS 1" : "IS 0";
            case "who":
                return "LEADS " + e.leaderId().orElse("");
            case "events": {
                List<String> lines = new ArrayList<>();
                for (Event ev = e.nextEvent(ms); ev != null; ev = e.nextEvent(0)) {
                    lines.add(describe(ev));
                }
                lines.add("END");
                return String.join("\n", lines);
            }
            default:
                return "ERR unknown command " + cmd;
        }
    }

    public static void main(String[] args) throws Exception {
        // Ids are UTF-8 on the wire to the test, whatever the locale says.
        System.setOut(new java.io.PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true,
                StandardCharsets.UTF_8));
        if (args.length < 3) {
            System.err.println("usage: Candidate HOSTS PATH ID [KEY=VALUE...]");
            System.exit(2);
        }
        Map<String, String> settings = new java.util.HashMap<>(Map.of("zk.hosts", args[0], "zk.session.timeout.ms", "6000"));
        for (int i = 3; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            settings.put(kv[0], kv.length > 1 ? kv[1] : "");
        }
        try (Client client = Client.connect(settings)) {
            if (!client.awaitConnected(30000)) {
                System.err.println("Candidate: cannot connect to " + args[0]);
                System.exit(1);
            }
            try (Elector e = client.elector(args[1], args[2])) {
                System.out.println("READY");
                System.out.flush();
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
                for (String line = in.readLine(); line != null; line = in.readLine()) {
                    String[] words = line.trim().split("\\s+");
                    if (words[0].isEmpty()) {
                        continue;
                    }
                    if (words[0].equals("quit")) {
                        break;
                    }
                    int ms = words.length > 1 ? Integer.parseInt(words[1]) : 0;
                    String reply;
                    try {
                        reply = run(client, e, words[0], ms);
                    } catch (ZkelectException ex) {
                        reply = "ERR " + ex.getMessage();
                    }
                    System.out.println(reply);
                    System.out.flush();
                }
            }
        }
        System.out.println("BYE");
        System.out.flush();
    }
}
