/*
 * queue_config_roles.c
 *	  Parses a queue's roles: each team's "roles" (or a free-for-all's
 *	  top-level "roles"), one composition or a list of acceptable ones, and
 *	  "autofill".  See roles.h.
 */
#include "postgres.h"

#include "utils/jsonb.h"

#include "queue_config_internal.h"
#include "roles.h"

/* A role's index, adding the name when it is new. */
static int
RoleIndexAdding(MmJsonPath *path, MmRolesConfig *roles, const char *name, int len)
{
	int			r = MmRoleIndex(roles, name, len);
	JsonbValue	v;

	if (r >= 0)
		return r;
	/* a ticket's "fill" means any role: no player could ask for this one */
	if (len == 4 && memcmp(name, "fill", 4) == 0)
		MmJsonError(path, "\"fill\" cannot name a role: in a ticket's roles it stands for any role");
	if (roles->nroles == MM_MAX_ROLES)
		MmJsonError(path, "a queue has at most %d roles", MM_MAX_ROLES);
	v.type = jbvString;
	v.val.string.val = (char *) name;
	v.val.string.len = len;
	roles->names[roles->nroles] = MmConfigReadName(path, &v);
	return roles->nroles++;
}

/* Reads one composition {"role": seats, ...} adding up to size. */
static void
ReadComposition(MmJsonPath *path, JsonbValue *value, MmRolesConfig *roles,
				MmComposition *c, int size, const char *what)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	int			total = 0;
	int			nkeys = 0;

	if (value->type != jbvBinary || !JsonContainerIsObject(value->val.binary.data))
		MmJsonError(path, "must be an object of seats per role, e.g. {\"tank\": 1, \"dps\": 3}");
	memset(c, 0, sizeof(*c));
	it = JsonbIteratorInit(value->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		char	   *key;
		int			keylen;
		int			o,
					r;

		if (tok != WJB_KEY)
			continue;
		key = pnstrdup(v.val.string.val, v.val.string.len);
		keylen = v.val.string.len;
		o = MmJsonPathPushKey(path, key, keylen);
		r = RoleIndexAdding(path, roles, key, keylen);
		tok = JsonbIteratorNext(&it, &v, true);
		c->seats[r] = MmJsonInteger(path, &v, 0, MM_MAX_MATCH_SIZE);
		total += c->seats[r];
		nkeys++;
		MmJsonPathPop(path, o);
	}
	if (nkeys == 0)
		MmJsonError(path, "must name at least one role");
	if (total != size)
		MmJsonError(path, "the seats add up to %d, but %s holds %d players", total, what, size);
}

/* Reads "roles" of a group: one composition or a list of them. */
static void
ReadCompositions(MmJsonPath *path, JsonbValue *value, MmRolesConfig *roles, int group,
				 int size, const char *what)
{
	if (value->type == jbvBinary && JsonContainerIsArray(value->val.binary.data))
	{
		int			n;
		JsonbContainer *list = MmJsonArray(path, value, 1, MM_MAX_COMPOSITIONS, &n);

		roles->ncompositions[group] = n;
		roles->compositions[group] = palloc0(sizeof(MmComposition) * n);
		for (int k = 0; k < n; k++)
		{
			int			o = MmJsonPathPushIndex(path, k);

			ReadComposition(path, getIthJsonbValueFromContainer(list, k), roles,
							&roles->compositions[group][k], size, what);
			MmJsonPathPop(path, o);
		}
	}
	else
	{
		roles->ncompositions[group] = 1;
		roles->compositions[group] = palloc0(sizeof(MmComposition));
		ReadComposition(path, value, roles, &roles->compositions[group][0], size, what);
	}
	roles->group_size[group] = size;
}

/*
 * Parses the roles of a queue whose teams (team_roles[t], NULL for a team
 * without) or free-for-all match (match_roles) name them, and "autofill"
 * (NULL when absent).  The teams and match_size are parsed already.
 */
void
MmConfigReadRoles(MmJsonPath *path, MmQueueConfig *config, JsonbValue *const *team_roles,
				  JsonbValue *match_roles, JsonbValue *autofill)
{
	MmRolesConfig *roles;
	int			any = 0;
	long		choices = 1;

	for (int t = 0; t < config->nteams; t++)
		any += team_roles[t] != NULL;
	if (any == 0 && match_roles == NULL)
	{
		if (autofill != NULL)
			WITH_KEY(path, "autofill",
					 MmJsonErrorHint(path, "Give the teams \"roles\" first.",
									 "needs roles"));
		return;
	}
	roles = palloc0(sizeof(MmRolesConfig));
	if (config->nteams > 0)
	{
		int			o = MmJsonPathPushKey(path, "teams", 5);

		roles->ngroups = config->nteams;
		roles->ncompositions = palloc0(sizeof(int) * config->nteams);
		roles->compositions = palloc0(sizeof(MmComposition *) * config->nteams);
		roles->group_size = palloc0(sizeof(int) * config->nteams);
		for (int t = 0; t < config->nteams; t++)
		{
			MmTeamConfig *team = &config->teams[t];
			int			o2 = MmJsonPathPushIndex(path, t);

			if (team_roles[t] == NULL)
				MmConfigMissingKey(path, "roles", "when another team has roles");
			WITH_KEY(path, "roles",
					 if (team->min != team->max)
					 MmJsonError(path, "a team with roles has a fixed size: its min (%d) and max (%d) must be equal",
								 team->min, team->max);
					 if (team->min_expansion.kind != MM_EXPANSION_NONE)
					 MmJsonError(path, "a team with roles has a fixed size: it cannot have an expansion");
					 ReadCompositions(path, team_roles[t], roles, t, team->max, "the team"));
			choices *= roles->ncompositions[t];
			MmJsonPathPop(path, o2);
		}
		MmJsonPathPop(path, o);
		if (match_roles != NULL)
			WITH_KEY(path, "roles",
					 MmJsonError(path, "is for a free-for-all: with teams, each team gives its roles"));
		if (choices > MM_MAX_COMPOSITION_CHOICES)
			WITH_KEY(path, "teams",
					 MmJsonError(path, "the teams' compositions combine in %ld ways, more than %d",
								 choices, MM_MAX_COMPOSITION_CHOICES));
	}
	else
	{
		roles->ngroups = 1;
		roles->ncompositions = palloc0(sizeof(int));
		roles->compositions = palloc0(sizeof(MmComposition *));
		roles->group_size = palloc0(sizeof(int));
		WITH_KEY(path, "roles",
				 if (config->match_min != config->match_max)
				 MmJsonError(path, "a match with roles has a fixed size: match_size.min (%d) and max (%d) must be equal",
							 config->match_min, config->match_max);
				 ReadCompositions(path, match_roles, roles, 0, config->match_max, "the match"));
	}

	if (autofill != NULL)
	{
		MmJsonField af[] = {{"after_seconds"}, {"protect_games"}};
		JsonbValue *v;
		int			o = MmJsonPathPushKey(path, "autofill", 8);

		MmJsonReadObject(path, autofill, af, lengthof_fields(af));
		if (!(v = MmJsonGet(af, lengthof(af), "after_seconds")))
			MmConfigMissingKey(path, "after_seconds", "(how long a ticket waits before it may be given any role)");
		WITH_KEY(path, "after_seconds",
				 roles->autofill_after_seconds = MmJsonNumber(path, v, 0, false, MM_MAX_LIFETIME_SECONDS));
		if ((v = MmJsonGet(af, lengthof(af), "protect_games")))
			WITH_KEY(path, "protect_games",
					 roles->protect_games = MmJsonInteger(path, v, 0, 1000));
		roles->autofill = true;
		MmJsonPathPop(path, o);
	}
	config->roles = roles;
}
