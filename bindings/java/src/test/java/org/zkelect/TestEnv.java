package org.zkelect;

/** What every test class of the binding needs from its environment. */
final class TestEnv {
    private TestEnv() {}

    /** The ensemble the tests run against (ZKELECT_TEST_HOSTS), or a clear failure. */
    static String hosts() {
        String hosts = System.getenv("ZKELECT_TEST_HOSTS");
        if (hosts == null || hosts.isEmpty()) {
            throw new IllegalStateException(
                    "ZKELECT_TEST_HOSTS is not set: these tests need a ZooKeeper ensemble");
        }
        return hosts;
    }
}
