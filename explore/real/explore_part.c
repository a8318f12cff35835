/*
 * explore_part: one participant process of the explorer (explore/real/).
 * It holds several clients, each with its own session and its own fault-proxy
 * link, and one candidacy per election path on every client: one path is
 * shared by the candidacies of many processes, and several paths share one
 * session (so the session lease has several holders). A tight loop samples
 * zkelect_is_leader() of every handle with CLOCK_MONOTONIC stamps taken
 * around the call, as tests/fault/paused_leader.c does; stdin carries the
 * user's actions, chosen by the explorer's driver (explore.py).
 *
 *   explore_part NAME T_MS NPATHS PATH... HOSTS...    (one HOSTS per client)
 *
 * Only the public header is used, so the program builds against any 1.x
 * libzkelect and runs against another 1.x build through LD_LIBRARY_PATH.
 *
 * The id of a candidacy is NAME.c<client>.e<path>.h<incarnation>: unique per
 * election handle, so a node found in ZooKeeper names its handle.
 *
 * Lines on stdout (one write(2) each; mono = CLOCK_MONOTONIC ns):
 *   READY
 *   FLIP c e v first_mono prev_mono token
 *                      is_leader of (c,e) changed to v as seen by the loop:
 *                      first_mono just before the first call that answered v,
 *                      prev_mono just after the last call that answered the
 *                      old value; token: zkelect_fencing_token() read just
 *                      after a change to 1 (-1 when it was no longer leading)
 *   HOLE c e start_mono end_mono
 *                      (c,e) answered 1 before and after a stretch of more
 *                      than 5 ms in which it was not asked: not known to lead
 *   EV c e h TYPE reason token mono id
 *                      an event of handle (c,e) incarnation h; id: the
 *                      event's participant id ("-" when none)
 *   ACK verb c e h rc mono_before mono_after
 *                      a command was carried out (rc of the library call)
 *   CMD mono words...  the stdin thread begins a command (its line)
 *   CMDEND mono        and is done with it: a CMD with no CMDEND after it
 *                      is a call still running (the driver names it when a
 *                      participant stops answering, explore.py stuck-call)
 *   FORK1 c e mono     in a child of fork(), the inherited handle (c,e)
 *                      answered is_leader 1 (it must answer 0 there)
 *   FORKRC c e NAME    in that child, zkelect_resign() on (c,e) returned
 *                      the code NAME (ZKELECT_ESTATE expected)
 *   LOGSTALL ms mono   the log callback slept ms (and set itself again
 *                      from inside, as the header allows) and returned
 *   RES1 c e h ret_mono seen_mono
 *                      is_leader answered 1 after resign returned (asked by
 *                      the resigning thread for 5 ms after the return)
 *   END c e v last_mono
 *   STDIN-END eof error errno
 *                      stdin ended without quit (the run ends early)
 *   BYE
 * stdin, one command a line ("c" a client index, "e" a path index):
 *   vol c e     volunteer (a new election handle first if there is none)
 *   res c e     resign
 *   des c e     destroy the election handle
 *   cbres c e   resign from inside the handle's next ELECTED callback
 *   cbdes c e   in the handle's next callback: zkelect_dispatch() nested
 *               (the handle has a dispatch callback too), then destroy of
 *               its own handle, which must answer ZKELECT_EDEADLK
 *               (ACK cbdes c e h rc m0 m1 dispatch_rc NAME: rc and NAME
 *               are the destroy's)
 *   fork c      fork(); the child asks every inherited handle is_leader for
 *               FORK_MS, then resign on one, and _exits; the parent waits
 *   logstall c ms  the next log record makes the log callback sleep ms
 *   xfer c e ID   zkelect_transfer() of handle (c,e) to the candidate ID,
 *               with a timeout of T_MS; on this thread, so the commands
 *               behind it wait for it (ACK xfer c e h rc m0 m1 NAME ID)
 *   oxfer c e ID  zkelect_client_transfer() on client c: path e's leader,
 *               whoever it is, asked from outside to hand over to ID, with
 *               a timeout of T_MS (ACK oxfer c e h rc m0 m1 NAME ID)
 *   fwall n     every handle of this process that answers is_leader 1 makes
 *               n fenced writes (issue 54), one after another, on this
 *               thread: a batch of a set of PATH.fdata to "token id serial"
 *               and a create of PATH.flog/w-<token>-<NAME>-<pid>-<serial>
 *               (the checker orders the records by their czxid), with a
 *               timeout of T_MS, none begun 2 T_MS after the command. Each says
 *               FW c e h token serial NAME mono_before mono_after record via
 *               (NAME: the code's name, OK, or NONE for a build without
 *               fenced writes; via: h, the handle's zkelect_fenced_commit,
 *               or c, every other write where the build has it:
 *               zkelect_client_fenced_commit on the process's next client
 *               with the node and token of the handle's last ELECTED)
 *   pgall n [hold_ms tok|fence]
 *               every handle of this process that answers is_leader 1 makes
 *               n writes to PostgreSQL (issue 54, the shipped guard
 *               fencing/fencing.sql), one transaction each, on this thread,
 *               none begun 2 T_MS after the command: BEGIN; SELECT
 *               zkelect.fence(PATH, token); INSERT INTO explore_pg a record
 *               (PATH, token, NAME, c, e, h, wid); COMMIT, with the token
 *               zkelect_fencing_token() read as the write begins. With
 *               hold_ms, the command's first write waits hold_ms after
 *               reading its token (tok) or after its fence call (fence):
 *               a writer slow between its check and its commit, where the
 *               driver stops the process. The DSN is $EXPLORE_PG_DSN; one
 *               connection, opened at the first write. Each says
 *               PG c e h token wid CODE mono_before mono_after held
 *               (CODE: OK committed; ZKE01 refused by the fence; UNKNOWN
 *               the connection failed while COMMIT was on its way; LOST it
 *               failed before COMMIT was sent, or ERR-<sqlstate> the
 *               server refused a statement: not committed; NOCONN no
 *               connection; NONE a participant built without libpq;
 *               held: the hold's place or -). PGERR what a line: a
 *               connection that could not be made, with libpq's message
 *   dcl c       destroy client c with its elections
 *   ncl c       a new client c (its elections come with the next vol)
 *   quit
 */
#define _GNU_SOURCE
#include <zkelect/zkelect.h>

#include <errno.h>
#include <execinfo.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAXC 8
#define MAXE 8
#define FORK_MS 300

struct slot {
    int c, e;
    pthread_mutex_t lock;        /* the sampler's call against destroy */
    zkelect_election_t *el;      /* under lock */
    int gen;                     /* incarnation of el */
    atomic_int resign_in_cb;
    atomic_int destroy_in_cb;
    /* the term of the last ELECTED (under lock): what `zkelect run` gives
     * its command, for a fenced write through another client */
    char node[400];
    int64_t node_token;
    /* the sampler's own */
    int last;
    int64_t prev_end;
};

struct ctx {                     /* opaque of an event callback */
    struct slot *s;
    int gen;
};

static const char *name;
static const char *tms;
static int npaths, nclients;
static char **paths, **hosts;
static zkelect_client_t *clients[MAXC];   /* the command thread's only */
static struct slot slots[MAXC][MAXE];
static struct ctx *ctxs[MAXC][MAXE];
static atomic_int stop_flag;
static atomic_int log_stall_ms;

static void say(const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (n > (int)sizeof buf - 2)
        n = (int)sizeof buf - 2;
    buf[n++] = '\n';
    /* One write per line (below PIPE_BUF): lines of the threads never mix. */
    ssize_t w = write(STDOUT_FILENO, buf, (size_t)n);
    (void)w;
}

static int64_t mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* resign: "is_leader answers 0 when this returns". The loop samples every
 * handle in turn, so a 1 that lasts microseconds after the return could slip
 * between its calls: the resigning thread itself asks for a while. */
static void check_after_resign(zkelect_election_t *e, int c, int ee, int gen, int64_t ret)
{
    int64_t end = ret + 5 * 1000000LL, now;
    while ((now = mono()) < end) {
        if (zkelect_is_leader(e)) {
            say("RES1 %d %d %d %" PRId64 " %" PRId64, c, ee, gen, ret, now);
            return;
        }
    }
}

/* The log callback came with the 1.1 header: a 1.0 build (e3e86e2, the
 * resign race) is explored without it, and its logstall steps do nothing. */
#if ZKELECT_VERSION_MAJOR > 1 || (ZKELECT_VERSION_MAJOR == 1 && ZKELECT_VERSION_MINOR >= 1)
#define HAVE_LOG_CB 1
#endif

#ifdef HAVE_LOG_CB
/* Issue 27 finding 8: a log callback may call the library and may be slow;
 * neither may stall a client (the explorer's checker sees what a stalled
 * client does to the lease). */
static void on_log(int level, const char *message, void *opaque)
{
    (void)level;
    (void)message;
    int ms = atomic_exchange(&log_stall_ms, 0);
    if (ms <= 0)
        return;
    zkelect_set_log_cb(ZKELECT_LOG_INFO, on_log, opaque);
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    say("LOGSTALL %d %" PRId64, ms, mono());
}
#endif

/* Transfers came during 1.2's development: the explorer defines
 * EXPLORE_TRANSFER when the header has them (explore.py reads it); an older
 * build's xfer steps do nothing (NONE). */
#ifdef EXPLORE_TRANSFER
#define HAVE_TRANSFER 1
#endif

/* Fenced writes came with issue 54: EXPLORE_FENCED when the header has
 * them (explore.py reads it); an older build's fwall steps say NONE. */
#ifdef EXPLORE_FENCED
#define HAVE_FENCED 1
#endif

/* The PostgreSQL half of issue 54: explore.py defines EXPLORE_PG when
 * libpq's pkg-config is there. */
#ifdef EXPLORE_PG
#include <libpq-fe.h>
#endif

static void on_event(zkelect_election_t *e, const zkelect_event_t *ev, void *opaque)
{
    struct ctx *x = opaque;
    int type = zkelect_event_type(ev);
    /* The id names the predecessor of a FOLLOWING: who waits for whom. */
    const char *id = zkelect_event_id(ev);
    say("EV %d %d %d %s %s %" PRId64 " %" PRId64 " %s", x->s->c, x->s->e, x->gen,
        zkelect_event_type_name(type), zkelect_reason_name(zkelect_event_reason(ev)),
        zkelect_event_token(ev), mono(), id && *id && strlen(id) < 200 ? id : "-");
    if (type == ZKELECT_EV_ELECTED) {
        pthread_mutex_lock(&x->s->lock);
        snprintf(x->s->node, sizeof x->s->node, "%s/%s", paths[x->s->e], zkelect_event_node(ev));
        x->s->node_token = zkelect_event_token(ev);
        pthread_mutex_unlock(&x->s->lock);
    }
    /* A call from the library's callback thread, as a user may make it. */
    if (type == ZKELECT_EV_ELECTED && atomic_exchange(&x->s->resign_in_cb, 0)) {
        int64_t m0 = mono();
        int rc = zkelect_resign(e);
        int64_t m1 = mono();
        if (rc == 0)
            check_after_resign(e, x->s->c, x->s->e, x->gen, m1);
        say("ACK cbres %d %d %d %d %" PRId64 " %" PRId64, x->s->c, x->s->e, x->gen, rc, m0, m1);
    }
    /* Issue 27 finding 3: a callback that dispatches (nested) and then
     * destroys its own handle must be refused, not hang or join itself. */
    if (atomic_exchange(&x->s->destroy_in_cb, 0)) {
        int64_t m0 = mono();
        int rd = zkelect_dispatch(e, 0);
        int rc = zkelect_election_destroy(e);
        say("ACK cbdes %d %d %d %d %" PRId64 " %" PRId64 " %d %s", x->s->c, x->s->e, x->gen, rc, m0,
            mono(), rd, rc ? zkelect_err_name(rc) : "OK");
    }
}

/* A child of fork() sees one thread and copies of every handle: none may
 * answer 1 there (issue 27 finding 11), and calls fail with ZKELECT_ESTATE. */
static void forked_child(void)
{
    int64_t end = mono() + FORK_MS * 1000000LL;
    int told[MAXC][MAXE] = {{0}};
    zkelect_election_t *any = NULL;
    int ac = -1, ae = -1;
    while (mono() < end)
        for (int c = 0; c < nclients; c++)
            for (int e = 0; e < npaths; e++) {
                zkelect_election_t *el = slots[c][e].el;   /* no other thread here */
                if (!el)
                    continue;
                if (!any) {
                    any = el;
                    ac = c;
                    ae = e;
                }
                if (zkelect_is_leader(el) && !told[c][e]) {
                    told[c][e] = 1;
                    say("FORK1 %d %d %" PRId64, c, e, mono());
                }
            }
    if (any)
        say("FORKRC %d %d %s", ac, ae, zkelect_err_name(zkelect_resign(any)));
    _exit(0);
}

static zkelect_client_t *new_client(int c)
{
    char err[512] = "";
    zkelect_conf_t *conf = zkelect_conf_new();
    zkelect_client_t *cl = NULL;
    /* The crash guard "on" where the build has it (1.2 on; an older build,
     * explored with --rev, answers EINVAL for the key): a guard that cannot
     * start is an ERR that fails the run, not auto's quiet fallback, so
     * every SIGKILL of the schedule is a process death with the guard. */
    char guard[16];
    size_t guard_len = sizeof guard;
    int has_guard = zkelect_conf_get(conf, "crash.guard", guard, &guard_len) == 0;
    /* explore.py --priority: this process's candidacies prefer to lead
     * (issue 33), asking for the lead one hold-down after they follow. */
    const char *prio = getenv("EXPLORE_PRIORITY");
    const char *holddown = getenv("EXPLORE_PRIORITY_HOLDDOWN_MS");
    /* explore.py --margin-ms: a lease margin that a shrink step's shorter
     * timeout may not fit (issue 50, finding 2's route). */
    const char *margin = getenv("EXPLORE_MARGIN_MS");
    /* A balanced group (issue 56): leaderships move by themselves. */
    const char *group = getenv("EXPLORE_BALANCE_GROUP");
    if (!zkelect_conf_set(conf, "zk.hosts", hosts[c], err, sizeof err) &&
        !zkelect_conf_set(conf, "zk.session.timeout.ms", tms, err, sizeof err) &&
        !zkelect_conf_set(conf, "zk.log.level", "info", err, sizeof err) &&
        (!has_guard || !zkelect_conf_set(conf, "crash.guard", "on", err, sizeof err)) &&
        (!prio || !zkelect_conf_set(conf, "election.priority", prio, err, sizeof err)) &&
        (!prio || !holddown ||
         !zkelect_conf_set(conf, "election.priority.holddown.ms", holddown, err, sizeof err)) &&
        (!margin || !zkelect_conf_set(conf, "lease.margin.ms", margin, err, sizeof err)) &&
        (!group || !zkelect_conf_set(conf, "balance.group", group, err, sizeof err)))
        cl = zkelect_client_new(conf, err, sizeof err);
    zkelect_conf_destroy(conf);
    if (!cl)
        say("ERR client %d %s", c, err);
    return cl;
}

/* Takes the handle out of the sampler's reach; the caller destroys it. */
static zkelect_election_t *take(struct slot *s)
{
    pthread_mutex_lock(&s->lock);
    zkelect_election_t *el = s->el;
    s->el = NULL;
    pthread_mutex_unlock(&s->lock);
    return el;
}

static void destroy_slot(struct slot *s, const char *verb)
{
    int64_t m0 = mono();
    zkelect_election_t *el = take(s);
    int rc = el ? zkelect_election_destroy(el) : -999;
    say("ACK %s %d %d %d %d %" PRId64 " %" PRId64, verb, s->c, s->e, s->gen, rc, m0, mono());
}

/* The token of handle s while it leads, read as a write begins: 0 when it
 * does not lead (the writes of a command stop there). The command thread
 * alone destroys handles, so s->el stays valid meanwhile. */
static int64_t leading_token(const struct slot *s)
{
    int64_t token = 0;
    if (!s->el || !zkelect_is_leader(s->el) || zkelect_fencing_token(s->el, &token) != 0)
        return 0;
    return token;
}

/* fwall: n fenced writes of handle (c, e), if it leads when each begins,
 * none begun past until (mono ns): the commands behind wait for this one. */
static void fenced_writes(struct slot *s, int n, int64_t until)
{
    static int serial;
    for (int i = 0; i < n && mono() < until; i++) {
        int64_t token = leading_token(s);
        if (!token)
            return;
        int k = ++serial;
        /* Every other write goes through the process's next client, with
         * the node and token of the handle's last ELECTED (what `zkelect
         * fenced` does for a command of `zkelect run`): that session's link
         * has faults of its own, so the write can reach ZooKeeper long
         * after the term ended (a resign, a transfer, a kill). */
        char via = 'h', node[400] = "";
        zkelect_client_t *other = clients[(s->c + 1) % nclients];
#ifdef EXPLORE_FENCED_AT
        if (k % 2 == 0 && other && nclients > 1) {
            pthread_mutex_lock(&s->lock);
            snprintf(node, sizeof node, "%s", s->node);
            int64_t node_token = s->node_token;
            pthread_mutex_unlock(&s->lock);
            /* Without a node and token of its own the write goes through
             * the handle, under the token it leads with: the record must
             * carry that one (it carried 0, and a write of the current
             * term read as a deposed term's: seeds 948269297, 948269306). */
            if (*node && node_token > 0) {
                via = 'c';
                token = node_token;
            }
        }
#endif
        (void)other;
        (void)node;
        char data[300], record[600];
        snprintf(data, sizeof data, "%" PRId64 " %s.c%d.e%d.h%d %d", token, name, s->c, s->e,
                 s->gen, k);
        snprintf(record, sizeof record, "%s.flog/w-%" PRId64 "-%s-%d-%d", paths[s->e], token, name,
                 (int)getpid(), k);
        int64_t m0 = mono();
        const char *code = "NONE";
#ifdef HAVE_FENCED
        char fdata[300];
        snprintf(fdata, sizeof fdata, "%s.fdata", paths[s->e]);
        zkelect_fenced_ops_t *ops = zkelect_fenced_ops_new();
        int rc = ops ? zkelect_fenced_ops_set(ops, fdata, data, strlen(data), -1) : ZKELECT_ENOMEM;
        if (!rc)
            rc = zkelect_fenced_ops_create(ops, record, "", 0, 0);
        if (!rc && via == 'c')
            rc = zkelect_client_fenced_commit(other, node, token, ops, atoi(tms));
        else if (!rc)
            rc = zkelect_fenced_commit(s->el, ops, atoi(tms));
        zkelect_fenced_ops_destroy(ops);
        code = rc ? zkelect_err_name(rc) : "OK";
#endif
        say("FW %d %d %d %" PRId64 " %d %s %" PRId64 " %" PRId64 " %s %c", s->c, s->e, s->gen, token,
            k, code, m0, mono(), strrchr(record, '/') + 1, via);
    }
}

/* A hold that a SIGSTOP may cut into: bounded by its deadline, whatever
 * interrupts it. */
static void hold_for(int ms)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    for (int i = 0; i < 1000; i++)
        if (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) != EINTR)
            return;
}

#ifdef EXPLORE_PG
static PGconn *pg;   /* the command thread's only */

/* A server's words go on one protocol line: printable, no spaces. */
static void one_word(char *dst, size_t len, const char *src)
{
    size_t i = 0;
    for (; src && src[i] && i + 1 < len; i++)
        dst[i] = src[i] > ' ' && src[i] < 127 ? src[i] : '_';
    dst[i] = 0;
}

static PGconn *pg_conn(void)
{
    if (pg && PQstatus(pg) == CONNECTION_OK)
        return pg;
    if (pg)
        PQfinish(pg);
    pg = NULL;
    const char *dsn = getenv("EXPLORE_PG_DSN");
    if (!dsn || !*dsn)
        return NULL;
    /* Every wait bounded: a lock held by a stopped process's transaction
     * (the hold below) lasts a stop, well under lock_timeout. */
    char info[1024];
    int n = snprintf(info, sizeof info,
                     "%s connect_timeout=5 application_name=explore-%s "
                     "options='-c lock_timeout=%d -c statement_timeout=%d'",
                     dsn, name, 4 * atoi(tms), 8 * atoi(tms));
    if (n < 0 || n >= (int)sizeof info)
        return NULL;
    pg = PQconnectdb(info);
    if (PQstatus(pg) != CONNECTION_OK) {
        char msg[300];
        one_word(msg, sizeof msg, PQerrorMessage(pg));
        say("PGERR connect %s", msg);
        PQfinish(pg);
        pg = NULL;
    }
    return pg;
}

/* What a statement that failed says: ZKE01 (the fence), LOST (the
 * connection went; its transaction cannot commit now), ERR-<sqlstate>. */
static void pg_failed(PGresult *r, char *code, size_t len)
{
    char state[8];
    one_word(state, sizeof state, r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL);
    if (PQstatus(pg) != CONNECTION_OK)
        snprintf(code, len, "LOST");
    else if (!strcmp(state, "ZKE01"))
        snprintf(code, len, "ZKE01");
    else
        snprintf(code, len, "ERR-%s", strlen(state) == 5 ? state : "none");
}

/* One fenced transaction; the outcome's name in code. */
static void pg_write(struct slot *s, int64_t token, const char *wid, int hold_ms, int hold_fence,
                     char *code, size_t len)
{
    if (!pg_conn()) {
        snprintf(code, len, "NOCONN");
        return;
    }
    char tok[24], c[8], e[8], h[16];
    snprintf(tok, sizeof tok, "%" PRId64, token);
    snprintf(c, sizeof c, "%d", s->c);
    snprintf(e, sizeof e, "%d", s->e);
    snprintf(h, sizeof h, "%d", s->gen);
    const char *fence_args[] = {paths[s->e], tok};
    const char *rec_args[] = {paths[s->e], tok, name, c, e, h, wid};
    PGresult *r = PQexec(pg, "BEGIN");
    int ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
    if (ok) {
        PQclear(r);
        r = PQexecParams(pg, "SELECT zkelect.fence($1, $2::bigint)", 2, NULL, fence_args, NULL,
                         NULL, 0);
        ok = r && PQresultStatus(r) == PGRES_TUPLES_OK;
    }
    if (ok && hold_ms > 0 && hold_fence)
        hold_for(hold_ms);
    if (ok) {
        PQclear(r);
        r = PQexecParams(pg,
                         "INSERT INTO explore_pg (path, token, part, client, election, handle, wid) "
                         "VALUES ($1, $2::bigint, $3, $4::int, $5::int, $6::int, $7)",
                         7, NULL, rec_args, NULL, NULL, 0);
        ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
    }
    if (!ok) {
        pg_failed(r, code, len);
        PQclear(r);
        if (PQstatus(pg) == CONNECTION_OK)
            PQclear(PQexec(pg, "ROLLBACK"));
        return;
    }
    PQclear(r);
    r = PQexec(pg, "COMMIT");
    if (r && PQresultStatus(r) == PGRES_COMMAND_OK && !strcmp(PQcmdStatus(r), "COMMIT"))
        snprintf(code, len, "OK");
    else if (PQstatus(pg) != CONNECTION_OK)
        /* COMMIT may have reached the server and committed: not known. */
        snprintf(code, len, "UNKNOWN");
    else if (r && PQresultStatus(r) == PGRES_COMMAND_OK)
        /* The server answered COMMIT with ROLLBACK: the transaction had
         * failed, though no statement said so. */
        snprintf(code, len, "ERR-rollback");
    else
        pg_failed(r, code, len);
    PQclear(r);
}
#endif

/* pgall: n PostgreSQL writes of handle (c, e), if it leads when each begins,
 * none begun past until; *hold_ms (0 once used) holds the first one. */
static void pg_writes(struct slot *s, int n, int64_t until, int *hold_ms, int hold_fence)
{
    static int serial;
    for (int i = 0; i < n && mono() < until; i++) {
        int64_t token = leading_token(s);
        if (!token)
            return;
        char wid[128], code[32] = "NONE";
        snprintf(wid, sizeof wid, "%s-%d-%d", name, (int)getpid(), ++serial);
        int hold = *hold_ms;
        *hold_ms = 0;
        int64_t m0 = mono();
        if (hold > 0 && !hold_fence)
            hold_for(hold);
#ifdef EXPLORE_PG
        pg_write(s, token, wid, hold, hold_fence, code, sizeof code);
#endif
        say("PG %d %d %d %" PRId64 " %s %s %" PRId64 " %" PRId64 " %s", s->c, s->e, s->gen, token,
            wid, code, m0, mono(), hold <= 0 ? "-" : hold_fence ? "fence" : "tok");
    }
}

static void run_command(char *line)
{
    char verb[16], target[200] = "";
    int c = -1, e = -1;
    int n = sscanf(line, "%15s %d %d %199s", verb, &c, &e, target);
    if (n == 4)
        n = 3;
    if (n < 1)
        return;
    if (!strcmp(verb, "fwall")) {   /* c is the count here */
        int64_t until = mono() + 2 * atoll(tms) * 1000000LL;
        for (int cc = 0; cc < nclients; cc++)
            for (int ee = 0; ee < npaths; ee++)
                fenced_writes(&slots[cc][ee], c, until);
        return;
    }
    if (!strcmp(verb, "pgall")) {   /* c is the count, e the hold's ms */
        int64_t until = mono() + 2 * atoll(tms) * 1000000LL;
        int hold = n == 3 && e > 0 && e <= 10000 ? e : 0;
        int at_fence = !strcmp(target, "fence");
        for (int cc = 0; cc < nclients; cc++)
            for (int ee = 0; ee < npaths; ee++)
                pg_writes(&slots[cc][ee], c, until, &hold, at_fence);
        return;
    }
    if (c < 0 || c >= nclients || (n == 3 && strcmp(verb, "logstall") && (e < 0 || e >= npaths))) {
        say("ERR bad command %s", line);
        return;
    }
    if (!strcmp(verb, "dcl")) {
        int64_t m0 = mono();
        for (int j = 0; j < npaths; j++)
            destroy_slot(&slots[c][j], "des");
        int rc = clients[c] ? zkelect_client_destroy(clients[c]) : -999;
        clients[c] = NULL;
        say("ACK dcl %d -1 -1 %d %" PRId64 " %" PRId64, c, rc, m0, mono());
        return;
    }
    if (!strcmp(verb, "fork")) {
        int64_t m0 = mono();
        pid_t pid = fork();
        if (pid == 0)
            forked_child();
        int st = 0, rc = pid < 0 ? -1 : 0;
        if (pid > 0 && (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)))
            rc = -2;
        say("ACK fork %d -1 -1 %d %" PRId64 " %" PRId64, c, rc, m0, mono());
        return;
    }
    if (!strcmp(verb, "logstall")) {
        int64_t m0 = mono();
        atomic_store(&log_stall_ms, e > 0 ? e : 0);
        say("ACK logstall %d -1 -1 0 %" PRId64 " %" PRId64, c, m0, mono());
        return;
    }
    if (!strcmp(verb, "ncl")) {
        int64_t m0 = mono();
        int rc = -999;
        if (!clients[c]) {
            clients[c] = new_client(c);
            rc = clients[c] ? 0 : -1;
        }
        say("ACK ncl %d -1 -1 %d %" PRId64 " %" PRId64, c, rc, m0, mono());
        return;
    }
    if (n != 3)
        return;
    struct slot *s = &slots[c][e];
    int64_t m0 = mono();
    if (!strcmp(verb, "vol")) {
        pthread_mutex_lock(&s->lock);
        zkelect_election_t *el = s->el;
        pthread_mutex_unlock(&s->lock);
        int rc = -999;
        if (!el && clients[c]) {
            char id[256], err[512] = "";
            snprintf(id, sizeof id, "%s.c%d.e%d.h%d", name, c, e, s->gen + 1);
            el = zkelect_election_new(clients[c], paths[e], id, err, sizeof err);
            if (el) {
                /* The previous incarnation's ctx may still be read by its
                 * last callback only until its destroy returned: free it. */
                free(ctxs[c][e]);
                struct ctx *x = malloc(sizeof *x);
                x->s = s;
                x->gen = s->gen + 1;
                ctxs[c][e] = x;
                /* Both: a background callback that dispatches (cbdes)
                 * runs this one nested. */
                zkelect_set_event_cb(el, on_event, x);
                zkelect_set_background_event_cb(el, on_event, x);
                pthread_mutex_lock(&s->lock);
                s->el = el;
                s->gen++;
                pthread_mutex_unlock(&s->lock);
            } else {
                say("ERR election %d %d %s", c, e, err);
            }
        }
        if (el)
            rc = zkelect_volunteer(el);
        say("ACK vol %d %d %d %d %" PRId64 " %" PRId64, c, e, s->gen, rc, m0, mono());
    } else if (!strcmp(verb, "res")) {
        /* The command thread alone destroys, so el stays valid here. */
        zkelect_election_t *el = s->el;
        int rc = el ? zkelect_resign(el) : -999;
        int64_t m1 = mono();
        if (rc == 0)
            check_after_resign(el, c, e, s->gen, m1);
        say("ACK res %d %d %d %d %" PRId64 " %" PRId64, c, e, s->gen, rc, m0, m1);
    } else if (!strcmp(verb, "xfer") || !strcmp(verb, "oxfer")) {
        /* Issue 33: a transfer among the faults. The handle's own call runs
         * here, where destroy runs too, so the handle outlives it. */
        int rc = -999;
        if (!*target) {
            say("ERR bad command %s", line);
            return;
        }
#ifdef HAVE_TRANSFER
        if (verb[0] == 'x') {
            if (s->el)
                rc = zkelect_transfer(s->el, target, atoi(tms));
        } else if (clients[c]) {
            rc = zkelect_client_transfer(clients[c], paths[e], target, atoi(tms));
        }
#endif
        say("ACK %s %d %d %d %d %" PRId64 " %" PRId64 " %s %s", verb, c, e, s->gen, rc, m0, mono(),
            rc == -999 ? "NONE" : rc ? zkelect_err_name(rc) : "OK", target);
    } else if (!strcmp(verb, "des")) {
        destroy_slot(s, "des");
    } else if (!strcmp(verb, "cbres")) {
        atomic_store(&s->resign_in_cb, 1);
        say("ACK cbres-armed %d %d %d 0 %" PRId64 " %" PRId64, c, e, s->gen, m0, mono());
    } else if (!strcmp(verb, "cbdes")) {
        atomic_store(&s->destroy_in_cb, 1);
        say("ACK cbdes-armed %d %d %d 0 %" PRId64 " %" PRId64, c, e, s->gen, m0, mono());
    }
}

/* A fatal signal leaves the faulting thread's frames on stderr, which the
 * driver reports with the crash: a participant that died mid-run was
 * otherwise seen only as candidacies that never came back (seed 20292900).
 * backtrace() is called once at start so that the handler does not load
 * libgcc (malloc) itself. */
static void on_fatal(int sig)
{
    static const char head[] = "CRASH: fatal signal; the thread's frames:\n";
    ssize_t w = write(STDERR_FILENO, head, sizeof head - 1);
    (void)w;
    void *frames[64];
    int n = backtrace(frames, 64);
    backtrace_symbols_fd(frames, n, STDERR_FILENO);
    /* SA_RESETHAND made it fatal again: delivered once this returns (a
     * signal sent with kill() would not repeat as a fault does). */
    raise(sig);
}

static void catch_fatal_signals(void)
{
    void *warm[1];
    backtrace(warm, 1);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    int sigs[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
}

/* Each command bracketed, so that a call that never returns is named by
 * the driver with its arguments, not guessed from the ACKs that stopped. */
static void command(char *line)
{
    size_t n = strcspn(line, "\n");
    say("CMD %" PRId64 " %.*s", mono(), (int)n, line);
    run_command(line);
    say("CMDEND %" PRId64, mono());
}

static void *read_stdin(void *arg)
{
    (void)arg;
    char line[256];
    int told = 0;
    while (fgets(line, sizeof line, stdin)) {
        if (!strncmp(line, "quit", 4)) {
            told = 1;
            break;
        }
        command(line);
    }
    /* An end not asked for (EOF, a read error) ends the run of this
     * participant early: said, so that the driver can tell it from a quit. */
    if (!told)
        say("STDIN-END eof=%d error=%d errno=%d", feof(stdin), ferror(stdin), errno);
    atomic_store(&stop_flag, 1);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: %s NAME T_MS NPATHS PATH... HOSTS...\n", argv[0]);
        return 2;
    }
    name = argv[1];
    tms = argv[2];
    npaths = atoi(argv[3]);
    if (npaths < 1 || npaths > MAXE || argc < 4 + npaths + 1) {
        fprintf(stderr, "bad NPATHS or no HOSTS\n");
        return 2;
    }
    paths = argv + 4;
    hosts = argv + 4 + npaths;
    nclients = argc - 4 - npaths;
    if (nclients > MAXC) {
        fprintf(stderr, "at most %d clients\n", MAXC);
        return 2;
    }
    for (int c = 0; c < nclients; c++)
        for (int e = 0; e < npaths; e++) {
            struct slot *s = &slots[c][e];
            s->c = c;
            s->e = e;
            pthread_mutex_init(&s->lock, NULL);
        }
    catch_fatal_signals();
#ifdef HAVE_LOG_CB
    zkelect_set_log_cb(ZKELECT_LOG_INFO, on_log, NULL);
#endif
    for (int c = 0; c < nclients; c++)
        if (!(clients[c] = new_client(c)))
            return 1;
    say("READY");
    pthread_t reader;
    pthread_create(&reader, NULL, read_stdin, NULL);

    const int64_t hole_ns = 5 * 1000000LL;
    struct timespec nap = {0, 200 * 1000};
    while (!atomic_load(&stop_flag)) {
        for (int c = 0; c < nclients; c++)
            for (int e = 0; e < npaths; e++) {
                struct slot *s = &slots[c][e];
                int64_t m0 = mono();
                int v = 0;
                int64_t token = -1;
                pthread_mutex_lock(&s->lock);
                if (s->el) {
                    v = zkelect_is_leader(s->el);
                    if (v == 1 && s->last == 0 && zkelect_fencing_token(s->el, &token) != 0)
                        token = -1;
                }
                pthread_mutex_unlock(&s->lock);
                int64_t m1 = mono();
                if (v == 1 && s->last == 1 && m0 - s->prev_end > hole_ns)
                    say("HOLE %d %d %" PRId64 " %" PRId64, c, e, s->prev_end, m0);
                if (v != s->last) {
                    say("FLIP %d %d %d %" PRId64 " %" PRId64 " %" PRId64, c, e, v, m0,
                        s->prev_end, token);
                    s->last = v;
                }
                s->prev_end = m1;
            }
        nanosleep(&nap, NULL);
    }
    for (int c = 0; c < nclients; c++)
        for (int e = 0; e < npaths; e++)
            say("END %d %d %d %" PRId64, c, e, slots[c][e].last, slots[c][e].prev_end);
    pthread_join(reader, NULL);
    /* Clients go with their sessions; the driver has checked what it needed. */
    for (int c = 0; c < nclients; c++) {
        for (int e = 0; e < npaths; e++) {
            zkelect_election_t *el = take(&slots[c][e]);
            if (el) {
                zkelect_set_background_event_cb(el, NULL, NULL);
                zkelect_election_destroy(el);
            }
        }
        if (clients[c])
            zkelect_client_destroy(clients[c]);
    }
    say("BYE");
    return 0;
}
