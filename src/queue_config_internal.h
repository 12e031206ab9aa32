/*
 * queue_config_internal.h
 *	  What the parts of the queue config parser share (queue_config.c,
 *	  queue_config_read.c, queue_config_rule.c, queue_config_compound.c,
 *	  queue_config_roles.c, queue_config_json.c, queue_config_sql.c).  The
 *	  rest of the extension sees queue_config.h.
 */
#ifndef MM_QUEUE_CONFIG_INTERNAL_H
#define MM_QUEUE_CONFIG_INTERNAL_H

#include "postgres.h"

#include "utils/jsonb.h"

#include "json_walk.h"
#include "queue_config.h"

#define lengthof_fields(f) ((int) lengthof(f))

/*
 * Reads field "key" of an already read object with a reader that needs the
 * path to point at the key.  Helpers push and pop around each read.
 */
#define WITH_KEY(path, key, stmt) \
	do { \
		int			_old = MmJsonPathPushKey((path), (key), strlen(key)); \
		stmt; \
		MmJsonPathPop((path), _old); \
	} while (0)

/*
 * queue_config_read.c: what is wrong with a name (queue, team, rule, rating
 * pool), or NULL when it is valid: 1-64 characters,
 * ^[A-Za-z0-9][A-Za-z0-9_-]*$.
 */
extern const char *MmNameProblem(const char *name);

/* queue_config_read.c: reads a name-like string (team, rule, pool) at the path. */
extern char *MmConfigReadName(MmJsonPath *path, JsonbValue *value);

/* queue_config_read.c: raises "is required" (why: the condition) for a missing key. */
extern void MmConfigMissingKey(MmJsonPath *path, const char *key, const char *why)
			pg_attribute_noreturn();

/* queue_config_rule.c: each rule type's name, and each comparison operator's. */
extern const char *const MmRuleTypeNames[];
extern const char *const MmCompareOpNames[];

/* queue_config_rule.c: splits and checks a dotted attribute path, e.g. "stats.skill". */
extern void MmConfigReadAttribute(MmJsonPath *path, JsonbValue *value, MmRuleConfig *rule);

/* queue_config_rule.c: the name of the key holding a rule type's threshold, or NULL. */
extern const char *MmRuleThresholdKey(MmRuleType type);

/* queue_config_rule.c: parses one element of "rules". */
extern void MmConfigReadRule(MmJsonPath *path, JsonbValue *value, MmRuleConfig *rule);

/*
 * queue_config_roles.c: the roles of the teams (team_roles[t]: a team's
 * "roles", NULL when absent) or of a free-for-all (match_roles), and
 * "autofill"; sets config->roles.
 */
extern void MmConfigReadRoles(MmJsonPath *path, MmQueueConfig *config,
							  JsonbValue *const *team_roles, JsonbValue *match_roles,
							  JsonbValue *autofill);

/* queue_config_compound.c: every compound's statement, once all rule names are known. */
extern void MmConfigParseCompounds(MmJsonPath *path, MmQueueConfig *config);

/*
 * queue_config_json.c: the parsed config as jsonb with every default filled
 * in, plus the keys of the source read outside the search, as given.
 */
extern Jsonb *MmQueueConfigToJsonb(const MmQueueConfig *config, Jsonb *source);

#endif							/* MM_QUEUE_CONFIG_INTERNAL_H */
