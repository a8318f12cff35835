#include "guard_link.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "clock.h"
#include "crash_guard.h"

extern char **environ;

namespace zkelect {
namespace crash_guard {
namespace {

constexpr int kGuardFd = 3;  // where the helper reads (zkelect-guard.c)
constexpr int kExitProtocol = 4, kExitVersion = 5;
// The service's answer, one line: "OK zkelect-guard 3" or "NO <why>".
constexpr size_t kAnswerMax = 512;

}  // namespace

GuardLink::GuardLink(int fd, bool socket, std::string name)
    : fd_(fd), socket_(socket), name_(std::move(name)) {
    struct stat st{};
    if (::fstat(fd, &st) == 0) {
        dev_ = st.st_dev;
        ino_ = st.st_ino;
    }
}

GuardLink::~GuardLink() {
    if (fd_ >= 0 && ours()) ::close(fd_);
}

bool GuardLink::ours() const {
    struct stat st{};
    return ::fstat(fd_, &st) == 0 && (socket_ ? S_ISSOCK(st.st_mode) : S_ISFIFO(st.st_mode)) &&
           st.st_dev == dev_ && st.st_ino == ino_;
}

// SIGPIPE is blocked for this thread during a pipe's write and a SIGPIPE it
// raised is taken back; a socket's sendmsg says MSG_NOSIGNAL.
ssize_t GuardLink::write_some(const char *p, size_t n, int pass_fd) {
    if (!ours()) return -1;
    if (socket_) {
        iovec iov{const_cast<char *>(p), n};
        msghdr m{};
        m.msg_iov = &iov;
        m.msg_iovlen = 1;
        alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
        if (pass_fd >= 0) {
            m.msg_control = control;
            m.msg_controllen = sizeof control;
            cmsghdr *h = CMSG_FIRSTHDR(&m);
            h->cmsg_level = SOL_SOCKET;
            h->cmsg_type = SCM_RIGHTS;
            h->cmsg_len = CMSG_LEN(sizeof(int));
            std::memcpy(CMSG_DATA(h), &pass_fd, sizeof(int));
        }
        ssize_t got;
        do got = ::sendmsg(fd_, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
        while (got < 0 && errno == EINTR);
        if (got >= 0) return got;
        return errno == EAGAIN ? 0 : -1;
    }
    sigset_t pipe_set, old, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    sigpending(&pending);
    const bool was_pending = sigismember(&pending, SIGPIPE) == 1;
    ssize_t got;
    do got = ::write(fd_, p, n);
    while (got < 0 && errno == EINTR);
    const int e = errno;
    if (got < 0 && e == EPIPE && !was_pending) {
        timespec zero{};
        sigtimedwait(&pipe_set, nullptr, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (got >= 0) return got;
    return e == EAGAIN ? 0 : -1;
}


namespace {

// When PID 1 of a PID namespace exits, the kernel kills every other
// process of the namespace: a guard started from there dies with its
// owner, before it could close the session. Said, not tried.
constexpr const char *kPid1Why =
    "this process is PID 1 of its PID namespace (a container without an init), and "
    "when PID 1 exits the kernel kills every process of the namespace, the crash "
    "guard with it: a crash of this process hands over only after the session "
    "timeout. An init in the container does not help if it exits with the app; "
    "set crash.guard.socket to a guard service outside the container (docs/design.md, "
    "\"The guard service\"), or crash.guard=off to say so and silence this";

// The pipe's read end, moved off kGuardFd if it landed there: dup2(3, 3)
// would leave FD_CLOEXEC set on some C libraries. -1 when that failed.
int read_end_off_guard_fd(int rd) {
    if (rd != kGuardFd) return rd;
    int moved = fcntl(rd, F_DUPFD_CLOEXEC, kGuardFd + 1);
    ::close(rd);
    return moved;
}

// posix_spawn of the helper with rd as its fd 3, the host's signal mask and
// handlers reset, nothing of the host's environment. Returns posix_spawn's
// code.
int spawn_helper(const std::string &path, int rd, int delay_ms, pid_t *child) {
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, rd, kGuardFd);
    posix_spawnattr_init(&at);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    // The host's signal mask and handlers are its own, not the helper's.
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    std::string delay = std::to_string(delay_ms), owner = std::to_string(getpid());
    char *argv[] = {const_cast<char *>(path.c_str()), const_cast<char *>("--delay-ms"),
                    delay.data(), owner.data(), nullptr};
    // Nothing of the host's environment: the helper needs none of it.
    char *envp[] = {nullptr};
    int rc = posix_spawn(child, path.c_str(), &fa, &at, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    return rc;
}

// The child's verdict comes in milliseconds; a helper that gives none
// (hung, stopped, a wrong program) is killed rather than waited for: the
// registry's lock, which fork() takes too, is held meanwhile. True when it
// was killed so.
bool killed_without_verdict(pid_t child) {
    int pfd = static_cast<int>(syscall(SYS_pidfd_open, child, 0));
    if (pfd < 0) return false;
    // Still our unreaped child (a host that reaps its own children may have
    // taken it): then the pidfd is its, not a reused pid's.
    siginfo_t peek{};
    if (waitid(P_PID, static_cast<id_t>(child), &peek, WEXITED | WNOHANG | WNOWAIT) != 0 ||
        peek.si_pid != 0) {
        ::close(pfd);
        return false;
    }
    bool hung = false;
    pollfd pf{pfd, POLLIN, 0};
    const int64_t until = boottime_ns() + kStartBoundMs * kNsPerMs;
    int r;
    do r = ::poll(&pf, 1, static_cast<int>(std::max<int64_t>(0, (until - boottime_ns()) / kNsPerMs)));
    while (r < 0 && errno == EINTR);
    if (r == 0) {
        hung = true;
        syscall(SYS_pidfd_send_signal, pfd, SIGKILL, nullptr, 0);
    }
    ::close(pfd);
    return hung;
}

// Why the start failed, from the exit status of the child posix_spawn made.
std::string refusal(const std::string &path, int st) {
    if (WIFEXITED(st) && WEXITSTATUS(st) == kExitVersion)
        return "the crash guard " + path + " speaks another version of the guard protocol "
               "than this library (" + std::to_string(kProtocolVersion) +
               ") and refused to start: install the zkelect-guard of this library's release";
    if (WIFEXITED(st) && WEXITSTATUS(st) == kExitProtocol)
        return "the crash guard " + path + " did not take this library's hello line and "
               "refused to start: install the zkelect-guard of this library's release";
    return "the crash guard " + path +
           (WIFEXITED(st) ? " refused to start (exit status " + std::to_string(WEXITSTATUS(st)) + ")"
                          : " was killed at start (signal " + std::to_string(WTERMSIG(st)) + ")");
}

// The child's verdict: w when the helper runs, else null with *why.
std::shared_ptr<GuardLink> verdict(const std::string &path, pid_t child,
                                   std::shared_ptr<GuardLink> w, std::string *why) {
    bool hung = killed_without_verdict(child);
    int st = 0;
    pid_t got;
    do got = waitpid(child, &st, 0);
    while (got < 0 && errno == EINTR);
    if (hung) {
        *why = "the crash guard " + path + " gave no verdict within " +
               std::to_string(kStartBoundMs) + " ms of its start and was killed";
        return {};
    }
    if (got == child) {
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return w;
        *why = refusal(path, st);
        return {};
    }
    // The host reaps its children itself (a SIGCHLD handler, or SIGCHLD
    // ignored): the child has exited by now, and a helper that runs holds
    // the pipe's read end; none does when the start failed.
    pollfd pf{w->fd(), 0, 0};
    if (::poll(&pf, 1, 0) > 0 && (pf.revents & (POLLERR | POLLHUP | POLLNVAL))) {
        *why = "the crash guard " + path + " refused to start";
        return {};
    }
    return w;
}

}  // namespace

// Starts the helper: posix_spawn (no fork of a threaded host), the pipe's
// read end as fd 3 with the hello line in it already, the write end
// O_CLOEXEC (no other child of the host inherits it through exec) and
// non-blocking, an empty environment. The child posix_spawn made exits at
// once with the start's verdict (the helper proper is its child, in a
// session of its own); it is reaped here.
std::shared_ptr<GuardLink> spawn_guard(int delay_ms, std::string *why) {
    const std::string path = crash_guard_path();
    if (getpid() == 1) {
        *why = kPid1Why;
        return {};
    }
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
        *why = std::string("cannot make the crash guard's pipe: ") + std::strerror(errno);
        return {};
    }
    auto w = std::make_shared<GuardLink>(p[1], false, "the crash guard of this process (" + path + ")");
    fcntl(p[1], F_SETFL, fcntl(p[1], F_GETFL) | O_NONBLOCK);
    int rd = read_end_off_guard_fd(p[0]);
    if (rd < 0) {
        *why = std::string("cannot make the crash guard's pipe: ") + std::strerror(errno);
        return {};
    }
    const std::string hello = "HELLO zkelect-guard " + std::to_string(kProtocolVersion) + "\n";
    if (w->write_some(hello.data(), hello.size()) != static_cast<ssize_t>(hello.size())) {
        ::close(rd);
        *why = "cannot write to the crash guard's pipe";
        return {};
    }
    pid_t child = -1;
    int rc = spawn_helper(path, rd, delay_ms, &child);
    ::close(rd);
    if (rc != 0) {
        *why = "cannot start the crash guard " + path + ": " + std::strerror(rc);
        return {};
    }
    return verdict(path, child, std::move(w), why);
}

namespace {

// The service's one line, within the start's bound: "" when none came, or
// once cancel_fd (if not -1) is readable.
std::string answer_of(int fd, int cancel_fd, bool *cancelled) {
    std::string got;
    const int64_t until = boottime_ns() + kStartBoundMs * kNsPerMs;
    for (int rounds = 0; rounds < 64 && got.find('\n') == std::string::npos && got.size() < kAnswerMax;
         ++rounds) {
        pollfd pf[2] = {{fd, POLLIN, 0}, {cancel_fd, POLLIN, 0}};
        const int64_t left = (until - boottime_ns()) / kNsPerMs;
        if (left <= 0) break;
        int r = ::poll(pf, cancel_fd >= 0 ? 2 : 1, static_cast<int>(left));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        if (cancel_fd >= 0 && pf[1].revents) {
            *cancelled = true;
            break;
        }
        char b[kAnswerMax];
        ssize_t n = ::recv(fd, b, kAnswerMax - got.size(), MSG_DONTWAIT);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n <= 0) break;
        got.append(b, static_cast<size_t>(n));
    }
    size_t nl = got.find('\n');
    return nl == std::string::npos ? std::string() : got.substr(0, nl);
}

}  // namespace

std::shared_ptr<GuardLink> connect_guard(const std::string &path, int delay_ms, std::string *why, int cancel_fd) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    if (path.size() >= sizeof a.sun_path) {
        *why = "the path is longer than a Unix socket's (" + std::to_string(sizeof a.sun_path - 1) + " bytes)";
        return {};
    }
    std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
    // Close-on-exec: no program this process runs holds the connection
    // (a child it forks without exec does: the registry closes that copy).
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        *why = std::string("cannot make a socket: ") + std::strerror(errno);
        return {};
    }
    auto link = std::make_shared<GuardLink>(fd, true, "the guard service at " + path);
    int rc;
    do rc = ::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a);
    while (rc != 0 && errno == EINTR);
    if (rc != 0) {
        // A Unix socket connects at once or not at all; EAGAIN: its
        // backlog is full, which is not waited for either.
        const int e = errno;
        *why = e == ENOENT         ? std::string("no such socket (is the guard service installed and started?)")
               : e == ECONNREFUSED ? std::string("nothing listens there (the guard service is not running)")
               : e == EAGAIN       ? std::string("the guard service takes no more connections now")
                                   : std::string("cannot connect: ") + std::strerror(e);
        return {};
    }
    const std::string hello = "HELLO zkelect-guard " + std::to_string(kProtocolVersion) + " " +
                              std::to_string(delay_ms) + "\n";
    // A service that refuses this process at once has closed its end by
    // the hello's write: its answer is there to read all the same.
    const bool sent = link->write_some(hello.data(), hello.size()) == static_cast<ssize_t>(hello.size());
    bool cancelled = false;
    const std::string answer = answer_of(fd, cancel_fd, &cancelled);
    if (sent && answer == "OK zkelect-guard " + std::to_string(kProtocolVersion)) return link;
    if (cancelled)
        *why = "given up before the guard service answered";
    else if (answer.compare(0, 3, "NO ") == 0)
        *why = "the guard service refused this process: " + answer.substr(3);
    else if (!sent)
        *why = "the guard service closed the connection at once";
    else if (answer.empty())
        *why = "the guard service gave no answer within " + std::to_string(kStartBoundMs) + " ms";
    else
        *why = "the guard service answered in another protocol (\"" + answer.substr(0, 80) +
               "\"): install the zkelect-guard of this library's release";
    return {};
}

}  // namespace crash_guard
}  // namespace zkelect
