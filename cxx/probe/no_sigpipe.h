// SIGPIPE kept from the host process while the library writes to a TLS
// connection.
//
// OpenSSL writes through write(2), which raises SIGPIPE when the peer has
// closed the connection; its default action ends the process. Plain TCP
// goes through send(MSG_NOSIGNAL) and raises nothing, but a TLS server that
// refuses a client (no SASL, an untrusted certificate) closes the
// connection while libzookeeper's I/O thread or a probe of the library is
// still writing: seen killing `zkelect status` against a server that
// requires SASL. A library may not change the process's disposition, so
// the signal is blocked for the writing thread instead: threads started
// while a NoSigpipe lives (libzookeeper's I/O and completion threads,
// started by zookeeper_init*) keep it blocked for their whole life, where
// a thread-directed SIGPIPE stays pending and harmless; and one raised in
// the calling thread meanwhile is taken back before the mask is restored,
// unless the host had one pending of its own.
#pragma once

#include <pthread.h>
#include <signal.h>
#include <time.h>

namespace zkelect {

class NoSigpipe {
public:
    NoSigpipe() {
        sigemptyset(&pipe_);
        sigaddset(&pipe_, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
        sigset_t pending;
        sigpending(&pending);
        was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    }
    ~NoSigpipe() {
        if (!was_pending_) {
            sigset_t pending;
            sigpending(&pending);
            if (sigismember(&pending, SIGPIPE) == 1) {
                timespec zero{};
                sigtimedwait(&pipe_, nullptr, &zero);
            }
        }
        pthread_sigmask(SIG_SETMASK, &old_, nullptr);
    }
    NoSigpipe(const NoSigpipe &) = delete;
    NoSigpipe &operator=(const NoSigpipe &) = delete;

private:
    sigset_t pipe_, old_;
    bool was_pending_ = false;
};

}  // namespace zkelect
