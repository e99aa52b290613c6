/* guard.c - the restart guard's plain form (see guard.h). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "guard.h"

/* Whether an INFO replication's master_replid2 is set (not all zeros): a
 * replica promoted, until its next full sync. */
static bool promoted(const char *info)
{
    const char *at = strstr(info, "master_replid2:");
    if (!at)
        return false;
    for (at += 15; (*at >= '0' && *at <= '9') || (*at >= 'a' && *at <= 'f'); at++)
        if (*at != '0')
            return true;
    return false;
}

int64_t rl_guard_plain(rl_node *node, const redisReply *r, char *record, size_t len)
{
    char id[41];
    record[0] = '\0';
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 4
        || (r->element[0]->type != REDIS_REPLY_STRING && r->element[0]->type != REDIS_REPLY_NIL)
        || r->element[1]->type != REDIS_REPLY_STRING || r->element[2]->type != REDIS_REPLY_STRING
        || r->element[3]->type != REDIS_REPLY_ARRAY || r->element[3]->elements != 2
        || r->element[3]->element[0]->type != REDIS_REPLY_STRING
        || r->element[3]->element[1]->type != REDIS_REPLY_STRING
        || rl_info_run_id(r->element[1]->str, r->element[1]->len, id) != 0)
        return -1;
    const redisReply *seen = r->element[0], **t = (const redisReply **)r->element[3]->element;
    long long now = strtoll(t[0]->str, NULL, 10) * 1000 + strtoll(t[1]->str, NULL, 10) / 1000;
    long long lease = rl_node_guard_ms(node), epoch = rl_node_epoch(node);
    /* As guard.lua: "<run_id> <epoch> <until>", or not a record at all. */
    char was[48] = "", tail;
    long long at_epoch = 0, at = 0;
    bool parsed = seen->type == REDIS_REPLY_STRING && seen->len < 100
               && sscanf(seen->str, "%47[0-9a-fA-F] %lld %lld%c", was, &at_epoch, &at, &tail) == 3
               && at >= 0;
    long long until;
    bool write = true;
    if (parsed && strcmp(was, id) == 0 && at_epoch >= epoch) {
        until = at;
        write = until > now + lease;   /* no record holds a server back longer */
        if (write)
            until = now + lease;
    } else {
        until = seen->type != REDIS_REPLY_NIL || epoch > 0 || promoted(r->element[2]->str)
              ? now + lease : 0;
        at_epoch = epoch;
    }
    if (write)
        snprintf(record, len, "%s %lld %lld", id, at_epoch, until);
    return until > now ? until - now : 0;
}
