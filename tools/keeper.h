/*
 * The private protocol between `zkelect run` and its keeper (`zkelect
 * __keeper`): fixed-size records over a SOCK_SEQPACKET socketpair, the
 * keeper's end on its fd 3. A record is one message; the end of the socket
 * is the end of `run`.
 */
#ifndef ZKELECT_TOOL_KEEPER_H
#define ZKELECT_TOOL_KEEPER_H

#include <stdint.h>

#define ZT_KEEPER_FD 3
#define ZT_KEEPER_ARG "__keeper"

struct zt_kmsg {
    int32_t type;
    int32_t a;
    int64_t b;
};

enum {
    /* keeper -> run */
    ZT_K_READY = 'R',   /* subreaper set, waiting for GO */
    ZT_K_STARTED = 'P', /* a = the child's pid; it has executed CMD */
    ZT_K_EXECFAIL = 'E',/* a = errno of the failed exec */
    ZT_K_KILLFAIL = 'F',/* a = errno, b = pid: a kill failed (b = 0: /proc
                           could not be read) */
    ZT_K_DEADLINE = 'D',/* b = how late run's word was (ms): tree killed */
    ZT_K_DONE = 'X',    /* a = the child's wait status, b = 1 when the keeper
                           killed it (deadline, run gone); tree empty */
    /* run -> keeper */
    ZT_K_GO = 'G',      /* start CMD; b = deadline */
    ZT_K_LEASE = 'L',   /* b = new deadline */
    ZT_K_SIGNAL = 'S',  /* a = a signal for CMD itself (not its tree), sent
                           only while CMD is not yet reaped: its pid is ours */
};
/* A deadline is CLOCK_BOOTTIME ms: the keeper kills the whole tree when it
 * passes without a newer one. */

#endif
