// Helpers shared by the C API integration tests. Public header only: these
// programs see libzkelect exactly as an outside C/C++ user does.
#pragma once

#include <zkelect/zkelect.h>

#include <gtest/gtest.h>

#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace capi {

using Clock = std::chrono::steady_clock;

inline int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch())
        .count();
}

// Without an ensemble every test would fail with a vague connect timeout;
// say what is missing instead.
inline std::string hosts() {
    const char *h = std::getenv("ZKELECT_TEST_HOSTS");
    if (!h || !*h) {
        std::fprintf(stderr,
                     "FATAL: ZKELECT_TEST_HOSTS is not set. Run through pytest "
                     "(tests/integration/test_capi.py) or export the connect string of a "
                     "test ensemble.\n");
        std::exit(2);
    }
    return h;
}

// Reads after a write are only ordered on one server: tests that compare one
// client's writes with another client's reads put every client on the first
// server of the ensemble.
inline std::string single_host() {
    std::string h = hosts();
    auto comma = h.find(',');
    auto slash = h.find('/');
    std::string first = h.substr(0, comma);
    if (first.find('/') != std::string::npos) first = first.substr(0, first.find('/'));
    if (slash != std::string::npos && (comma == std::string::npos || slash > comma))
        first += h.substr(slash);  // keep a chroot
    return first;
}

// Every election path of one program run lives under this root, so the pytest
// wrapper can check afterwards that no candidate node was left behind.
inline std::string root() {
    const char *r = std::getenv("ZKELECT_TEST_ROOT");
    return (r && *r) ? r : "/capi-" + std::to_string(getpid());
}

inline std::string fresh_path(const char *tag = nullptr) {
    static std::atomic<int> counter{0};
    const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = info ? std::string(info->test_suite_name()) + "." + info->name() : "x";
    for (char &c : name)
        if (!isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') c = '_';
    return root() + "/" + name + (tag ? std::string("-") + tag : "") + "-" +
           std::to_string(getpid()) + "-" + std::to_string(++counter);
}

struct ClientDel {
    void operator()(zkelect_client_t *c) const {
        int rc = zkelect_client_destroy(c);
        EXPECT_EQ(rc, 0) << "zkelect_client_destroy: " << zkelect_err_name(rc);
    }
};
struct ElectionDel {
    void operator()(zkelect_election_t *e) const {
        int rc = zkelect_election_destroy(e);
        EXPECT_EQ(rc, 0) << "zkelect_election_destroy: " << zkelect_err_name(rc);
    }
};
struct EventDel {
    void operator()(zkelect_event_t *e) const { zkelect_event_destroy(e); }
};
struct PartsDel {
    void operator()(zkelect_participants_t *p) const { zkelect_participants_destroy(p); }
};
using Client = std::unique_ptr<zkelect_client_t, ClientDel>;
using Election = std::unique_ptr<zkelect_election_t, ElectionDel>;
using Event = std::unique_ptr<zkelect_event_t, EventDel>;
using Parts = std::unique_ptr<zkelect_participants_t, PartsDel>;

constexpr int kSessionMs = 2000;

inline Client new_client(const std::string &connect = hosts(), int session_ms = kSessionMs) {
    char err[256] = "";
    zkelect_conf_t *conf = zkelect_conf_new();
    EXPECT_NE(conf, nullptr);
    if (!conf) return nullptr;
    EXPECT_EQ(zkelect_conf_set(conf, "zk.hosts", connect.c_str(), err, sizeof err), 0) << err;
    EXPECT_EQ(zkelect_conf_set(conf, "zk.session.timeout.ms",
                               std::to_string(session_ms).c_str(), err, sizeof err),
              0)
        << err;
    Client c(zkelect_client_new(conf, err, sizeof err));
    zkelect_conf_destroy(conf);
    EXPECT_NE(c, nullptr) << "zkelect_client_new: " << err;
    if (c) {
        int rc = zkelect_client_await_connected(c.get(), 15000);
        EXPECT_EQ(rc, 0) << "await_connected: " << zkelect_err_name(rc);
    }
    return c;
}

inline Election new_election(zkelect_client_t *c, const std::string &path, const std::string &id) {
    char err[256] = "";
    Election e(zkelect_election_new(c, path.c_str(), id.c_str(), err, sizeof err));
    EXPECT_NE(e, nullptr) << "zkelect_election_new(" << path << ", " << id << "): " << err;
    return e;
}

inline std::string describe(const zkelect_event_t *ev) {
    if (!ev) return "(none)";
    std::string s = zkelect_event_type_name(zkelect_event_type(ev));
    if (zkelect_event_type(ev) == ZKELECT_EV_DEPOSED)
        s += std::string("(") + zkelect_reason_name(zkelect_event_reason(ev)) + ")";
    if (zkelect_event_type(ev) == ZKELECT_EV_ERROR)
        s += std::string("(") + zkelect_err_name(zkelect_event_error(ev)) + ": " +
             zkelect_event_message(ev) + ")";
    return s;
}

// The next event of type `type`, skipping others (recorded in *skipped when
// given); null when none came within timeout_ms.
inline Event wait_event(zkelect_election_t *e, int type, int timeout_ms,
                        std::vector<std::string> *skipped = nullptr) {
    auto deadline = now_ms() + timeout_ms;
    for (;;) {
        int64_t left = deadline - now_ms();
        if (left <= 0) return nullptr;
        Event ev(zkelect_next_event(e, static_cast<int>(left)));
        if (!ev) continue;
        if (zkelect_event_type(ev.get()) == type) return ev;
        if (skipped) skipped->push_back(describe(ev.get()));
    }
}

// The next event whatever its type; null on timeout.
inline Event next_event(zkelect_election_t *e, int timeout_ms) {
    return Event(zkelect_next_event(e, timeout_ms));
}

struct Part {
    std::string id, node;
    int64_t token;
};

inline std::vector<Part> participants(zkelect_client_t *c, const std::string &path) {
    char err[256] = "";
    Parts p(zkelect_client_participants(c, path.c_str(), err, sizeof err));
    EXPECT_NE(p, nullptr) << "zkelect_client_participants(" << path << "): " << err;
    std::vector<Part> out;
    if (!p) return out;
    for (size_t i = 0; i < zkelect_participants_count(p.get()); ++i)
        out.push_back({zkelect_participants_id(p.get(), i), zkelect_participants_node(p.get(), i),
                       zkelect_participants_token(p.get(), i)});
    return out;
}

inline std::vector<std::string> ids_of(const std::vector<Part> &ps) {
    std::vector<std::string> out;
    for (auto &p : ps) out.push_back(p.id);
    return out;
}

inline std::string join(const std::vector<std::string> &v) {
    std::string s;
    for (auto &x : v) s += (s.empty() ? "" : ",") + x;
    return s;
}

}  // namespace capi
