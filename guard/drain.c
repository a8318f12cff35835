/*
 * zkelect-guard's drain: once the owner is dead, the wait (at most the drain
 * delay) for what it wrote to its peers to be acknowledged, leaving out its
 * connections to ZooKeeper (zkelect-guard.c, "Draining").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "guard.h"

/* The ZooKeeper servers of the guarded sessions, learnt as each ADD and SRV
 * is read: the dead owner's own connections to them are not waited for in the
 * drain (what it sent ZooKeeper is ordered before the guard's close or
 * refused after it; a successor acts only after the close). Waiting for
 * them would cost a round trip to the ensemble on every crash. */
#define MAX_SERVERS 64
struct server {
    int family;
    unsigned char addr[16];
    uint16_t port; /* network order */
};
static struct server servers[MAX_SERVERS];
static size_t n_servers;

static void add_server(const struct sockaddr *sa)
{
    struct server v = {.family = sa->sa_family};
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        memcpy(v.addr, &in->sin_addr, 4);
        v.port = in->sin_port;
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        memcpy(v.addr, &in6->sin6_addr, 16);
        v.port = in6->sin6_port;
    } else {
        return;
    }
    for (size_t i = 0; i < n_servers; i++)
        if (memcmp(&servers[i], &v, sizeof v) == 0)
            return;
    if (n_servers < MAX_SERVERS)
        servers[n_servers++] = v;
}

/* host:port,host:port[/chroot]; [v6]:port too: the connect string of an
 * ADD, or the addresses of an SRV. Numbers only: a name is not looked up
 * here (a lookup in the read loop could hold the guard for as long as DNS
 * takes, while its owner's writes wait): the owner sends the addresses it
 * connected to (SRV). What is not a number is left out: its connections
 * are then waited for like any other (never less). */
void learn_servers(const char *list)
{
    char buf[MAX_LINE + 1];
    snprintf(buf, sizeof buf, "%s", list);
    char *slash = strchr(buf, '/');
    if (slash)
        *slash = '\0';
    char *save = NULL;
    int items = 0;
    for (char *h = strtok_r(buf, ",", &save); h && items < MAX_SERVERS; h = strtok_r(NULL, ",", &save), items++) {
        char *port = NULL;
        if (*h == '[') {
            char *close = strchr(h, ']');
            if (!close)
                continue;
            *close = '\0';
            h++;
            if (close[1] == ':')
                port = close + 2;
        } else {
            char *colon = strrchr(h, ':');
            if (colon && strchr(h, ':') == colon) {
                *colon = '\0';
                port = colon + 1;
            }
        }
        struct addrinfo hint = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV},
                        *res = NULL;
        if (getaddrinfo(h, port && *port ? port : "2181", &hint, &res) != 0)
            continue;
        int n = 0;
        for (struct addrinfo *a = res; a && n < 16; a = a->ai_next, n++)
            add_server(a->ai_addr);
        freeaddrinfo(res);
    }
}

/* An IPv4 address also appears as ::ffff:a.b.c.d on a dual-stack socket. */
static int is_server(int family, const uint32_t dst[4], uint16_t dport)
{
    unsigned char a[16];
    memcpy(a, dst, 16);
    for (size_t i = 0; i < n_servers; i++) {
        const struct server *v = &servers[i];
        if (v->port != dport)
            continue;
        if (family == v->family && memcmp(a, v->addr, family == AF_INET ? 4 : 16) == 0)
            return 1;
        static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (family == AF_INET6 && v->family == AF_INET && memcmp(a, mapped, 12) == 0 &&
            memcmp(a + 12, v->addr, 4) == 0)
            return 1;
    }
    return 0;
}

/* ---- draining ------------------------------------------------------------ */

/* How many of this user's orphaned TCP connections (no file refers to them:
 * their process closed them, or died) to anything but the guarded sessions'
 * ZooKeeper servers still have something unacknowledged: in FIN_WAIT1,
 * CLOSING or LAST_ACK. -1 when the kernel cannot be asked. */
static int unacked_orphans(void)
{
    int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (nl < 0)
        return -1;
    struct timeval tv = {.tv_sec = 0, .tv_usec = 200000};
    setsockopt(nl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const uid_t uid = geteuid(), ruid = getuid();
    int found = 0;
    static const int families[] = {AF_INET, AF_INET6};
    for (size_t f = 0; f < 2 && found >= 0; f++) {
        struct {
            struct nlmsghdr h;
            struct inet_diag_req_v2 r;
        } req;
        memset(&req, 0, sizeof req);
        req.h.nlmsg_len = sizeof req;
        req.h.nlmsg_type = SOCK_DIAG_BY_FAMILY;
        req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
        req.h.nlmsg_seq = (unsigned)(f + 1);
        req.r.sdiag_family = (uint8_t)families[f];
        req.r.sdiag_protocol = IPPROTO_TCP;
        req.r.idiag_states = 1u << TCP_FIN_WAIT1 | 1u << TCP_CLOSING | 1u << TCP_LAST_ACK;
        struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
        if (sendto(nl, &req, sizeof req, 0, (struct sockaddr *)&kernel, sizeof kernel) != (ssize_t)sizeof req) {
            found = -1;
            break;
        }
        /* A dump ends in NLMSG_DONE; bounded in reads all the same. */
        int done = 0;
        for (int reads = 0; reads < 4096 && !done; reads++) {
            static char buf[32768] __attribute__((aligned(8)));
            ssize_t n = recv(nl, buf, sizeof buf, 0);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                found = -1;
                break;
            }
            for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
                if (h->nlmsg_type == NLMSG_DONE) {
                    done = 1;
                    break;
                }
                if (h->nlmsg_type == NLMSG_ERROR) {
                    /* A kernel without IPv6 answers the AF_INET6 dump with an
                     * error: nothing of that family to wait for. */
                    struct nlmsgerr *e = NLMSG_DATA(h);
                    if (h->nlmsg_len < NLMSG_LENGTH(sizeof *e) || families[f] != AF_INET6)
                        found = -1;
                    done = 1;
                    break;
                }
                if (h->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
                    continue;
                const struct inet_diag_msg *m = NLMSG_DATA(h);
                if (m->idiag_inode == 0 && (m->idiag_uid == uid || m->idiag_uid == ruid) &&
                    !is_server(m->idiag_family, m->id.idiag_dst, m->id.idiag_dport))
                    found++;
            }
        }
        if (!done && found >= 0)
            found = -1;
    }
    close(nl);
    return found;
}

/* Until nothing the dead owner sent is unacknowledged, or delay_ms from
 * since: whichever is first. */
void drain(int64_t since, long delay_ms)
{
    int64_t until = since + delay_ms;
    for (int round = 0; round <= MAX_DELAY_MS; round++) {
        int64_t left = until - now_ms();
        if (left <= 0) {
            say("drain: the delay is over (%ld ms)", delay_ms);
            return;
        }
        int n = unacked_orphans();
        if (n == 0) {
            say("drain: nothing unacknowledged after %lld ms", (long long)(now_ms() - since));
            return;
        }
        /* Unknowable (-1): the whole delay, as without the check. */
        struct timespec ts = n < 0 ? (struct timespec){.tv_sec = left / 1000, .tv_nsec = (left % 1000) * 1000000}
                                   : (struct timespec){.tv_sec = 0, .tv_nsec = 1000000};
        if (n < 0)
            say("drain: sock_diag unavailable (%s): waiting out the delay", strerror(errno));
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
}
