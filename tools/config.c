/*
 * zkelect config: every configuration key of the library, its default, and
 * the value the other commands would use with the same options. Asks the
 * library (zkelect_conf_key, zkelect_conf_get), so a key added there shows
 * here without a change to the tool. Connects to nothing.
 */
#define _GNU_SOURCE
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void config_usage(FILE *f)
{
    zt_usage(f, ZT_CMD_CONFIG,
             "Lists every configuration key of the library with its default and its\n"
             "current value: the one the other commands would use given the same\n"
             "options (--connect or ZKELECT_CONNECT, the timeouts, --set, --auth-file\n"
             "or ZKELECT_AUTH). Nothing is connected to; --path is accepted and\n"
             "ignored, so any command line of the other commands can be checked.\n"
             "Credentials (" ZT_SECRET_KEYS_TEXT ") show as *** when set.\n"
             "--json prints one JSON object.\n",
             "Exit status: 0 shown, 1 failure, 2 bad arguments, a value the library\n"
             "refuses, or a lease.margin.ms that zkelect run would refuse.\n");
}

/* Values that are credentials: shown only as set or not. */
static int secret(const char *key)
{
    for (const char *const *k = zt_secret_keys; *k; k++)
        if (!strcmp(key, *k))
            return 1;
    return 0;
}

/* The value of key in conf, malloc'ed (NULL when out of memory). */
static char *conf_value(const zkelect_conf_t *conf, const char *key)
{
    size_t len = 64;
    char *buf = NULL;
    for (;;) {
        char *grown = realloc(buf, len);
        if (!grown) {
            free(buf);
            return NULL;
        }
        buf = grown;
        int rc = zkelect_conf_get(conf, key, buf, &len);
        if (rc == ZKELECT_OK)
            break;
        if (rc != ZKELECT_ERANGE) {
            buf[0] = '\0';
            break;
        }
    }
    if (secret(key) && buf[0]) {
        explicit_bzero(buf, strlen(buf));
        strcpy(buf, "***");
    }
    return buf;
}

int zt_cmd_config(int argc, char **argv)
{
    struct zt_opts o = {0};
    int rc = zt_parse(argc, argv, ZT_CMD_CONFIG, &o, config_usage);
    if (rc >= 0)
        return rc;
    int exit_code = ZT_EXIT_FAILURE;
    zkelect_conf_t *current = zt_conf(&o, &exit_code);
    if (!current) {
        config_usage(stderr);
        return exit_code;
    }
    /* What run would refuse with the same options is refused here too. */
    rc = zt_check_margin(current);
    if (rc >= 0) {
        zkelect_conf_destroy(current);
        config_usage(stderr);
        return rc;
    }
    zkelect_conf_t *defaults = zkelect_conf_new();
    if (!defaults) {
        zt_err("out of memory");
        zkelect_conf_destroy(current);
        return ZT_EXIT_FAILURE;
    }
    size_t width = 0;
    for (size_t i = 0; zkelect_conf_key(i); i++)
        if (strlen(zkelect_conf_key(i)) > width)
            width = strlen(zkelect_conf_key(i));

    rc = ZT_EXIT_OK;
    if (o.json)
        fputs("{\"keys\":[", stdout);
    else
        printf("%-*s  %-10s  %s\n", (int)width, "KEY", "DEFAULT", "CURRENT");
    for (size_t i = 0; zkelect_conf_key(i); i++) {
        const char *key = zkelect_conf_key(i);
        char *def = conf_value(defaults, key), *cur = conf_value(current, key);
        if (!def || !cur) {
            free(def);
            free(cur);
            zt_err("out of memory");
            rc = ZT_EXIT_FAILURE;
            break;
        }
        if (o.json) {
            fputs(i ? ",{\"key\":" : "{\"key\":", stdout);
            zt_json_string(stdout, key);
            fputs(",\"default\":", stdout);
            zt_json_string(stdout, def);
            fputs(",\"current\":", stdout);
            zt_json_string(stdout, cur);
            fputs("}", stdout);
        } else {
            /* Escaped words: an empty value is "" and a value with spaces
             * stays one column. */
            char d[256], c[1024];
            zt_escape(def, d, sizeof d);
            zt_escape(cur, c, sizeof c);
            printf("%-*s  %-10s  %s\n", (int)width, key, d, c);
        }
        free(def);
        free(cur);
    }
    if (o.json && rc == ZT_EXIT_OK)
        fputs("]}\n", stdout);
    zkelect_conf_destroy(defaults);
    zkelect_conf_destroy(current);
    if (fflush(stdout) != 0 && rc == ZT_EXIT_OK) {
        zt_err("writing the listing failed");
        rc = ZT_EXIT_FAILURE;
    }
    return rc;
}
