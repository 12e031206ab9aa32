/*
 * queue_config_read.c
 *	  The readers every part of the queue config parser shares (a name, a
 *	  missing key): below queue_config.c, queue_config_rule.c and
 *	  queue_config_roles.c, so that the parts never call their hub.
 */
#include "postgres.h"

#include "utils/jsonb.h"

#include "json_walk.h"
#include "queue_config_internal.h"

/*
 * What is wrong with a name (queue, team, rule, rating pool), or NULL when it
 * is valid: 1-64 characters, ^[A-Za-z0-9][A-Za-z0-9_-]*$.
 */
const char *
MmNameProblem(const char *name)
{
	size_t		len = strlen(name);
	size_t		i;

	if (len == 0)
		return "must not be empty";
	if (!((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z') ||
		  (name[0] >= '0' && name[0] <= '9')))
		return "must start with a letter or a digit";
	for (i = 1; i < len; i++)
	{
		char		c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '_' || c == '-'))
			return "may contain only letters, digits, '_' and '-'";
	}
	if (len > MM_MAX_NAME_LENGTH)
		return "must be at most 64 characters";
	return NULL;
}

/* Reads a name-like string (team, rule, pool) at the current path. */
char *
MmConfigReadName(MmJsonPath *path, JsonbValue *value)
{
	char	   *name;
	const char *problem;

	if (value->type != jbvString)
		MmJsonError(path, "must be a string");
	name = pnstrdup(value->val.string.val, value->val.string.len);
	problem = MmNameProblem(name);
	if (problem != NULL)
		MmJsonError(path, "%s", problem);
	return name;
}

/* Raises "is required" for a missing key. */
void
pg_attribute_noreturn()
MmConfigMissingKey(MmJsonPath *path, const char *key, const char *why)
{
	MmJsonPathPushKey(path, key, strlen(key));
	if (why)
		MmJsonError(path, "is required %s", why);
	MmJsonError(path, "is required");
}
