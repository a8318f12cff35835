// The server's tickTime (issue 27, finding 9): the parse of the answer to
// `conf`, and the probe that asks for it, against listeners of our own on
// loopback that answer as ZooKeeper 3.8 does, refuse, say nothing, flood,
// or close. No ZooKeeper here: tests/integration/test_ticktime.py has it.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tick_probe.h"
#include "tick_time.h"

using namespace zkelect;
using Clock = std::chrono::steady_clock;

namespace {

const char kStandalone[] =
    "clientPort=27907\nsecureClientPort=-1\ndataDir=/tmp/d/version-2\ndataDirSize=4194777\n"
    "dataLogDir=/tmp/d/version-2\ndataLogSize=4194777\ntickTime=2000\nmaxClientCnxns=0\n"
    "minSessionTimeout=1000\nmaxSessionTimeout=30000\nclientPortListenBacklog=-1\nserverId=0\n";
const char kRefused[] = "conf is not executed because it is not in the whitelist.\n";

bool parse(const std::string &s, bool complete, ServerConf *out) {
    return parse_conf_reply(s.data(), s.size(), complete, out);
}

}  // namespace

TEST(TickTimeParse, ReadsZooKeepers38Answer) {
    ServerConf c;
    ASSERT_TRUE(parse(kStandalone, true, &c));
    EXPECT_EQ(c.tick_ms, 2000);
    EXPECT_EQ(c.min_session_ms, 1000);
    EXPECT_EQ(c.max_session_ms, 30000);
    // A quorum member's answer ends without a newline; so may any.
    ServerConf q;
    ASSERT_TRUE(parse("tickTime=200\nminSessionTimeout=400\nversion=0", true, &q));
    EXPECT_EQ(q.tick_ms, 200);
    EXPECT_EQ(q.max_session_ms, -1);
    std::string crlf = kStandalone;
    for (size_t at = crlf.find('\n'); at != std::string::npos; at = crlf.find('\n', at + 2))
        crlf.replace(at, 1, "\r\n");
    ServerConf r;
    ASSERT_TRUE(parse(crlf, true, &r));
    EXPECT_EQ(r.tick_ms, 2000);
}

TEST(TickTimeParse, RefusesWhatIsNotSaidWhole) {
    ServerConf c;
    c.tick_ms = 7;
    EXPECT_FALSE(parse(kRefused, true, &c));
    EXPECT_EQ(c.tick_ms, 7);  // untouched
    EXPECT_FALSE(parse("", true, &c));
    EXPECT_FALSE(parse("tickTime=20", false, &c));      // it may go on: 200, 2000...
    EXPECT_TRUE(parse("tickTime=20", true, &c));
    EXPECT_FALSE(parse("tickTime=0\n", true, &c));
    EXPECT_FALSE(parse("tickTime=3600001\n", true, &c));
    EXPECT_FALSE(parse("tickTime=99999999999999999999\n", true, &c));
    EXPECT_FALSE(parse("tickTime=-1\n", true, &c));
    EXPECT_FALSE(parse("tickTime= 2000\n", true, &c));
    EXPECT_FALSE(parse("tickTime=02000\n", true, &c));
    EXPECT_FALSE(parse("tickTime=2000\ntickTime=200\n", true, &c));  // which?
    EXPECT_TRUE(parse("tickTime=2000\ntickTime=2000\n", true, &c));
    EXPECT_FALSE(parse(" tickTime=2000\n", true, &c));   // not a line of its own
    EXPECT_FALSE(parse("tickTime=2000\nminSessionTimeout=x\n", true, &c));
    EXPECT_TRUE(parse("tickTime=2000\nminSessionTimeout=-1\n", true, &c));
    EXPECT_EQ(c.min_session_ms, -1);
    EXPECT_EQ(c.tick_ms, 2000);
}

TEST(TickTimeParse, LooksAtNoMoreThanItsBound) {
    std::string pad;
    while (pad.size() + 4 <= kMaxConfReply) pad += "a=b\n";
    ServerConf c;
    EXPECT_FALSE(parse(pad + "tickTime=2000\n", true, &c));
    EXPECT_TRUE(parse("tickTime=2000\n" + pad + pad, true, &c));
}

namespace {

// One listener on 127.0.0.1: each connection gets `mode`'s treatment.
class Listener {
public:
    enum Mode { kAnswer, kRefuse, kSilent, kFlood, kClose };
    explicit Listener(Mode mode, std::string answer = kStandalone)
        : mode_(mode), answer_(std::move(answer)) {
        fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
        EXPECT_EQ(::listen(fd_, 8), 0);
        socklen_t len = sizeof peer_.ss;
        ::getsockname(fd_, reinterpret_cast<sockaddr *>(&peer_.ss), &len);
        peer_.len = len;
        thread_ = std::thread([this] { serve(); });
    }
    ~Listener() {
        stop_ = true;
        ::shutdown(fd_, SHUT_RDWR);
        thread_.join();
        ::close(fd_);
    }
    const PeerAddr &peer() const { return peer_; }
    std::string heard() {
        std::lock_guard<std::mutex> lock(mu_);
        return heard_;
    }

private:
    void serve() {
        while (!stop_) {
            int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (c < 0) return;
            if (mode_ == kClose) {
                ::close(c);
                continue;
            }
            char word[4];
            size_t got = 0;
            while (got < 4) {
                ssize_t n = ::recv(c, word + got, 4 - got, 0);
                if (n <= 0) break;
                got += size_t(n);
            }
            {
                std::lock_guard<std::mutex> lock(mu_);
                heard_.assign(word, got);
            }
            if (mode_ == kAnswer || mode_ == kRefuse) {
                const std::string &s = mode_ == kAnswer ? answer_ : std::string(kRefused);
                ::send(c, s.data(), s.size(), MSG_NOSIGNAL);
            } else if (mode_ == kFlood) {
                std::string chunk(65536, 'x');
                while (!stop_ && ::send(c, chunk.data(), chunk.size(), MSG_NOSIGNAL) > 0) {
                }
            } else {
                while (!stop_) std::this_thread::sleep_for(std::chrono::milliseconds(5));
            }
            ::close(c);
        }
    }

    Mode mode_;
    std::string answer_;
    int fd_ = -1;
    PeerAddr peer_;
    std::atomic<bool> stop_{false};
    std::mutex mu_;
    std::string heard_;
    std::thread thread_;
};

struct Answers {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::pair<uint64_t, bool>> got;
    ServerConf last;

    TickProbe::Done done() {
        return [this](uint64_t ticket, bool ok, const ServerConf &conf) {
            std::lock_guard<std::mutex> lock(mu);
            got.emplace_back(ticket, ok);
            last = conf;
            cv.notify_all();
        };
    }
    bool wait(size_t n, int ms) {
        std::unique_lock<std::mutex> lock(mu);
        return cv.wait_for(lock, std::chrono::milliseconds(ms), [&] { return got.size() >= n; });
    }
    std::vector<std::pair<uint64_t, bool>> seen() {
        std::lock_guard<std::mutex> lock(mu);
        return got;
    }
    int64_t tick() {
        std::lock_guard<std::mutex> lock(mu);
        return last.tick_ms;
    }
};

constexpr int64_t kMsNs = 1000000;

}  // namespace

TEST(TickProbe, ReadsTheTickOfAServerThatAnswers) {
    Listener server(Listener::kAnswer);
    Answers a;
    TickProbe probe(a.done());
    ASSERT_TRUE(probe.ask(1, server.peer(), 2000 * kMsNs));
    ASSERT_TRUE(a.wait(1, 5000));
    EXPECT_EQ(a.seen()[0], std::make_pair(uint64_t(1), true));
    EXPECT_EQ(a.tick(), 2000);
    EXPECT_EQ(server.heard(), "conf");
}

TEST(TickProbe, ARefusalAClosedConnectionAndNoListenerAreNoAnswer) {
    Answers a;
    TickProbe probe(a.done());
    {
        Listener refuse(Listener::kRefuse);
        ASSERT_TRUE(probe.ask(1, refuse.peer(), 2000 * kMsNs));
        ASSERT_TRUE(a.wait(1, 5000));
    }
    {
        Listener closes(Listener::kClose);
        ASSERT_TRUE(probe.ask(2, closes.peer(), 2000 * kMsNs));
        ASSERT_TRUE(a.wait(2, 5000));
    }
    PeerAddr nobody;
    {
        Listener gone(Listener::kClose);
        nobody = gone.peer();
    }
    ASSERT_TRUE(probe.ask(3, nobody, 2000 * kMsNs));
    ASSERT_TRUE(a.wait(3, 5000));
    for (const auto &g : a.seen()) EXPECT_FALSE(g.second) << g.first;
}

TEST(TickProbe, SilenceAndAFloodEndAtTheDeadline) {
    for (auto mode : {Listener::kSilent, Listener::kFlood}) {
        Listener server(mode);
        Answers a;
        TickProbe probe(a.done());
        auto t0 = Clock::now();
        ASSERT_TRUE(probe.ask(1, server.peer(), 300 * kMsNs));
        ASSERT_TRUE(a.wait(1, 5000)) << mode;
        auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
        EXPECT_FALSE(a.seen()[0].second) << mode;
        if (mode == Listener::kSilent) {
            EXPECT_GE(took, 290);
        }
        EXPECT_LT(took, 3000) << mode;  // the deadline, or the byte bound, whichever first
    }
}

TEST(TickProbe, ANewerRequestAndStopAbandonAtOnce) {
    Listener silent(Listener::kSilent);
    Listener answers(Listener::kAnswer);
    Answers a;
    TickProbe probe(a.done());
    ASSERT_TRUE(probe.ask(1, silent.peer(), 60000 * kMsNs));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_TRUE(probe.ask(2, answers.peer(), 60000 * kMsNs));
    ASSERT_TRUE(a.wait(1, 5000));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_EQ(a.seen().size(), 1u);  // the abandoned one is never answered
    EXPECT_EQ(a.seen()[0], std::make_pair(uint64_t(2), true));

    ASSERT_TRUE(probe.ask(3, silent.peer(), 60000 * kMsNs));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    auto t0 = Clock::now();
    probe.stop();
    EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count(),
              1000);
    EXPECT_EQ(a.seen().size(), 1u);
    EXPECT_FALSE(probe.ask(4, answers.peer(), 1000 * kMsNs));
}

TEST(TickProbe, NamesItsPeer) {
    PeerAddr p;
    EXPECT_EQ(p.text(), "");
    auto *a = reinterpret_cast<sockaddr_in *>(&p.ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(2181);
    inet_pton(AF_INET, "10.1.2.3", &a->sin_addr);
    p.len = sizeof(sockaddr_in);
    EXPECT_EQ(p.text(), "10.1.2.3:2181");
    PeerAddr q;
    auto *b = reinterpret_cast<sockaddr_in6 *>(&q.ss);
    b->sin6_family = AF_INET6;
    b->sin6_port = htons(2182);
    inet_pton(AF_INET6, "::1", &b->sin6_addr);
    q.len = sizeof(sockaddr_in6);
    EXPECT_EQ(q.text(), "[::1]:2182");
}
