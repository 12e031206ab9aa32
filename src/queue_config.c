/*
 * queue_config.c
 *	  Parsing and validation of a queue's configuration (mm.queues.config):
 *	  the top level (match_size, teams, rating, statistics, algorithm, the
 *	  other keys) and the checks across rules.
 *
 * MmParseQueueConfigWith walks the jsonb once and fills an MmQueueConfig;
 * every problem is refused with the JSON path of the first problem
 * (json_walk.c).  The tick and the ticket validation only ever read the
 * parsed struct, so a rule type's options are parsed and checked in the
 * parser and nowhere else.  Its parts: queue_config_rule.c (one rule's keys),
 * queue_config_compound.c (compound statements), queue_config_roles.c
 * (roles), all on queue_config_read.c's shared readers; the normalised form
 * is queue_config_json.c's, the SQL entry points queue_config_sql.c's.
 *
 * The parser reads no catalog: the function a "match_function" names is
 * checked by the caller's MmMatchFunctionCheck (MmParseQueueConfig passes the
 * catalog lookup).
 */
#include "postgres.h"

#include "utils/jsonb.h"
#include "utils/varlena.h"

#include "json_walk.h"
#include "queue_config_internal.h"
#include "roles.h"

/* Parses "match_size". */
static void
ReadMatchSize(MmJsonPath *path, JsonbValue *value, MmQueueConfig *config)
{
	MmJsonField f[] = {{"min"}, {"max"}};
	JsonbValue *v;

	MmJsonReadObject(path, value, f, lengthof_fields(f));
	if (!(v = MmJsonGet(f, lengthof(f), "min")))
		MmConfigMissingKey(path, "min", NULL);
	WITH_KEY(path, "min", config->match_min = MmJsonInteger(path, v, 2, MM_MAX_MATCH_SIZE));
	config->match_size_min = config->match_min;
	if (!(v = MmJsonGet(f, lengthof(f), "max")))
		MmConfigMissingKey(path, "max", NULL);
	WITH_KEY(path, "max",
			 config->match_max = MmJsonInteger(path, v, 2, MM_MAX_MATCH_SIZE);
			 if (config->match_max < config->match_min)
				 MmJsonError(path, "must be >= match_size.min (%d)", config->match_min));
}

/* Parses one element of "teams". */
static void
ReadTeam(MmJsonPath *path, JsonbValue *value, MmTeamConfig *team, JsonbValue **roles)
{
	MmJsonField f[] = {{"name"}, {"min"}, {"max"}, {"expansion"}, {"roles"}};
	JsonbValue *v;

	MmJsonReadObject(path, value, f, lengthof_fields(f));
	if (!(v = MmJsonGet(f, lengthof(f), "name")))
		MmConfigMissingKey(path, "name", NULL);
	WITH_KEY(path, "name", team->name = MmConfigReadName(path, v));
	if (!(v = MmJsonGet(f, lengthof(f), "min")))
		MmConfigMissingKey(path, "min", NULL);
	WITH_KEY(path, "min", team->min = MmJsonInteger(path, v, 1, MM_MAX_MATCH_SIZE));
	if (!(v = MmJsonGet(f, lengthof(f), "max")))
		MmConfigMissingKey(path, "max", NULL);
	WITH_KEY(path, "max",
			 team->max = MmJsonInteger(path, v, 1, MM_MAX_MATCH_SIZE);
			 if (team->max < team->min)
				 MmJsonError(path, "must be >= the team's min (%d)", team->min));
	team->min_expansion.kind = MM_EXPANSION_NONE;
	/* read once every team is: the role names are the queue's */
	*roles = NULL;
	if ((v = MmJsonGet(f, lengthof(f), "roles")))
	{
		*roles = palloc(sizeof(JsonbValue));
		**roles = *v;
	}
	if ((v = MmJsonGet(f, lengthof(f), "expansion")))
	{
		MmJsonField ef[] = {{"every_seconds"}, {"steps"}};
		JsonbValue *ev;
		JsonbContainer *steps;
		MmExpansion *e = &team->min_expansion;
		int			o = MmJsonPathPushKey(path, "expansion", 9);

		MmJsonReadObject(path, v, ef, lengthof_fields(ef));
		if (!(ev = MmJsonGet(ef, lengthof(ef), "every_seconds")))
			MmConfigMissingKey(path, "every_seconds", NULL);
		WITH_KEY(path, "every_seconds",
				 e->every_seconds = MmJsonNumber(path, ev, 0, true, MM_JSON_MAX_NUMBER));
		if (!(ev = MmJsonGet(ef, lengthof(ef), "steps")))
			MmConfigMissingKey(path, "steps", "(a team's expansion gives its min at each step)");
		WITH_KEY(path, "steps",
				 steps = MmJsonArray(path, ev, 1, MM_MAX_EXPANSION_STEPS, &e->nsteps));
		e->kind = MM_EXPANSION_CUSTOM;
		e->steps = palloc0(sizeof(double) * e->nsteps);
		e->step_off = palloc0(sizeof(bool) * e->nsteps);
		for (int i = 0; i < e->nsteps; i++)
		{
			int			o1 = MmJsonPathPushKey(path, "steps", 5);
			int			o2 = MmJsonPathPushIndex(path, i);

			e->steps[i] = MmJsonInteger(path, getIthJsonbValueFromContainer(steps, i), 1, team->min);
			MmJsonPathPop(path, o2);
			MmJsonPathPop(path, o1);
		}
		MmJsonPathPop(path, o);
	}
}

/* The fields of a stored rating each system has (mm.ratings), for errors. */
static const char *
RatingSystemFields(const char *system)
{
	if (strcmp(system, "elo") == 0)
		return "rating";
	if (strcmp(system, "glicko2") == 0)
		return "rating, rd";
	return "rating (its mu), mu, sigma";
}

static bool
RatingSystemStores(const char *system, const char *field)
{
	if (strcmp(field, "rating") == 0)
		return true;
	if (strcmp(system, "glicko2") == 0)
		return strcmp(field, "rd") == 0;
	if (strcmp(system, "openskill") == 0)
		return strcmp(field, "mu") == 0 || strcmp(field, "sigma") == 0;
	return false;
}

/*
 * Rules that read the stored rating need the queue's rating system (its
 * pool and defaults), and "widen_by_rd" (a difference rule's window grows by
 * that many times the players' largest rating deviation) needs Glicko-2.
 * Read after all rules, since "rating" and "rules" may come in any order.
 */
static void
ParseRatingSources(MmJsonPath *path, MmQueueConfig *config, JsonbContainer *rules)
{
	int			o = MmJsonPathPushKey(path, "rules", 5);
	int			i;

	for (i = 0; i < config->nrules; i++)
	{
		MmRuleConfig *rule = &config->rules[i];
		JsonbValue *elem = getIthJsonbValueFromContainer(rules, i);
		JsonbValue	v;
		int			o2 = MmJsonPathPushIndex(path, i);

		if (rule->source == MM_SOURCE_RATING && config->rating_system == NULL)
			WITH_KEY(path, "source",
					 MmJsonErrorHint(path, "Add \"rating\": {\"system\": ..., \"pool\": ...} to the queue.",
									 "\"rating\" needs the queue's rating system"));
		/* a field the system does not store would be missing for every player */
		if (rule->source == MM_SOURCE_RATING && !RatingSystemStores(config->rating_system, rule->attribute))
			WITH_KEY(path, "attribute",
					 MmJsonError(path, "%s ratings have no \"%s\" (they have %s)", config->rating_system,
								 rule->attribute, RatingSystemFields(config->rating_system)));
		if (rule->source == MM_SOURCE_RATING && rule->type == MM_RULE_COMPARISON &&
			(rule->reference_string != NULL || rule->compare_op == MM_CMP_CONTAINS))
			WITH_KEY(path, rule->compare_op == MM_CMP_CONTAINS ? "operator" : "reference",
					 MmJsonError(path, "a rating is a number: compare it with a number"));
		if (getKeyJsonValueFromContainer(elem->val.binary.data, "widen_by_rd", 11, &v) != NULL)
			WITH_KEY(path, "widen_by_rd",
					 if (rule->type != MM_RULE_DIFFERENCE || rule->source != MM_SOURCE_RATING ||
						 config->rating_system == NULL || strcmp(config->rating_system, "glicko2") != 0)
					 MmJsonError(path, "is allowed only on a difference rule with \"source\": \"rating\" in a Glicko-2 queue");
					 rule->widen_by_rd = MmJsonNumber(path, &v, 0, true, 1000));
		MmJsonPathPop(path, o2);
	}
	MmJsonPathPop(path, o);
}

/*
 * With "expansion_age_selection": "newest" the search checks a candidate
 * match at the steps of an age its youngest ticket has reached, and records
 * that ticket's own steps: they hold only when every later step is at least
 * as loose as the one before.  So each custom expansion must loosen: a
 * larger threshold for the rules with a maximum, a smaller min_size for
 * set_intersection; a comparison's reference has no looser side.
 */
static void
CheckStepsLoosen(MmJsonPath *path, const MmQueueConfig *config)
{
	int			o = MmJsonPathPushKey(path, "rules", 5);

	for (int r = 0; r < config->nrules; r++)
	{
		const MmRuleConfig *rule = &config->rules[r];
		const MmExpansion *e = &rule->expansion;
		int			o2 = MmJsonPathPushIndex(path, r);
		double		previous = rule->threshold;
		int			looser;

		if (e->kind != MM_EXPANSION_CUSTOM)
		{
			MmJsonPathPop(path, o2);
			continue;
		}
		looser = rule->type == MM_RULE_SET_INTERSECTION ? -1 :
			rule->type == MM_RULE_COMPARISON ? 0 : 1;
		(void) MmJsonPathPushKey(path, "expansion", 9);
		if (looser == 0)
			MmJsonError(path, "is not allowed on a comparison with \"expansion_age_selection\": \"newest\" (a reference has no looser side)");
		(void) MmJsonPathPushKey(path, "steps", 5);
		for (int k = 0; k < e->nsteps; k++)
		{
			if (e->step_off[k])
				continue;
			if (looser > 0 ? e->steps[k] < previous : e->steps[k] > previous)
			{
				(void) MmJsonPathPushIndex(path, k);
				MmJsonError(path, "with \"expansion_age_selection\": \"newest\" each step must be as loose as the one before (%s %g)",
							looser > 0 ? ">=" : "<=", previous);
			}
			previous = e->steps[k];
		}
		MmJsonPathPop(path, o2);
	}
	MmJsonPathPop(path, o);
}

/*
 * "match_function": a schema-qualified name (its shape is checked here, as
 * the catalog lookup would report it), then check's verdict on the function
 * it names (the catalog, match_function.c), when given.
 */
static void
ReadMatchFunction(MmJsonPath *path, JsonbValue *value, MmMatchFunctionCheck check)
{
	char	   *name = MmJsonString(path, value, 1, 2 * NAMEDATALEN + 1);
	char	   *raw = pstrdup(name);
	List	   *parts;

	/* SplitIdentifierString reports bad quoting instead of raising 42602 */
	if (!SplitIdentifierString(raw, '.', &parts) || list_length(parts) != 2)
		MmJsonError(path, "\"%s\" must be a schema-qualified function name (schema.function)",
					name);
	if (check != NULL)
		check(name, path);
}

/*
 * "penalties": checked here on every write; the SQL side reads it from the
 * stored config (65_penalties.sql), so only what the tick needs is kept:
 * the low-priority pool's bound, or -1 without a pool.
 */
static void
ReadPenalties(MmJsonPath *path, JsonbValue *value, MmQueueConfig *config)
{
	MmJsonField f[] = {{"cooldown_seconds"}, {"cooldown_growth"}, {"max_cooldown_seconds"},
	{"low_priority"}, {"forgive_after_games"}};
	JsonbValue *v;

	MmJsonReadObject(path, value, f, lengthof_fields(f));
	if ((v = MmJsonGet(f, lengthof(f), "cooldown_seconds")))
	{
		/* a reason absent here is no offence */
		MmJsonField cf[] = {{"dodge"}, {"acceptance_timeout"}, {"leave"}};
		JsonbValue *cv;
		int			o = MmJsonPathPushKey(path, "cooldown_seconds", 16);

		MmJsonReadObject(path, v, cf, lengthof_fields(cf));
		for (int k = 0; k < lengthof_fields(cf); k++)
			if ((cv = MmJsonGet(cf, lengthof(cf), cf[k].name)))
				WITH_KEY(path, cf[k].name,
						 (void) MmJsonNumber(path, cv, 0, false, MM_MAX_LIFETIME_SECONDS));
		MmJsonPathPop(path, o);
	}
	if ((v = MmJsonGet(f, lengthof(f), "cooldown_growth")))
		WITH_KEY(path, "cooldown_growth", (void) MmJsonNumber(path, v, 1, false, 10));
	if ((v = MmJsonGet(f, lengthof(f), "max_cooldown_seconds")))
		WITH_KEY(path, "max_cooldown_seconds",
				 (void) MmJsonNumber(path, v, 0, false, MM_MAX_LIFETIME_SECONDS));
	if ((v = MmJsonGet(f, lengthof(f), "low_priority")))
	{
		MmJsonField lf[] = {{"offences"}, {"games"}, {"max_wait_seconds"}};
		JsonbValue *lv;
		int			o = MmJsonPathPushKey(path, "low_priority", 12);

		MmJsonReadObject(path, v, lf, lengthof_fields(lf));
		if (!(lv = MmJsonGet(lf, lengthof(lf), "offences")))
			MmConfigMissingKey(path, "offences", "(the offences that put a player in the low-priority pool)");
		WITH_KEY(path, "offences", (void) MmJsonInteger(path, lv, 1, 1000));
		if (!(lv = MmJsonGet(lf, lengthof(lf), "games")))
			MmConfigMissingKey(path, "games", "(the games a player then plays in the low-priority pool)");
		WITH_KEY(path, "games", (void) MmJsonInteger(path, lv, 1, 1000));
		/* the pool must never starve: past this age a penalised ticket matches anyone */
		if (!(lv = MmJsonGet(lf, lengthof(lf), "max_wait_seconds")))
			MmConfigMissingKey(path, "max_wait_seconds", "(after it a penalised ticket matches anyone)");
		WITH_KEY(path, "max_wait_seconds",
				 config->low_priority_max_wait = MmJsonNumber(path, lv, 0, false, 86400));
		MmJsonPathPop(path, o);
	}
	if ((v = MmJsonGet(f, lengthof(f), "forgive_after_games")))
		WITH_KEY(path, "forgive_after_games", (void) MmJsonInteger(path, v, 1, 1000));
}

/*
 * Reads "teams" (and what follows from them: match_size when it was not
 * given, the largest party); returns each team's "roles", NULL when absent.
 */
static JsonbValue **
ReadTeams(MmJsonPath *path, JsonbValue *v, MmQueueConfig *config, bool with_match_size)
{
	JsonbContainer *teams;
	JsonbValue **team_roles;
	int			sum_min = 0;
	int			sum_max = 0;
	int			o;
	int			i,
				j;

	o = MmJsonPathPushKey(path, "teams", 5);
	teams = MmJsonArray(path, v, 2, MM_MAX_TEAMS, &config->nteams);
	config->teams = palloc0(sizeof(MmTeamConfig) * config->nteams);
	team_roles = palloc0(sizeof(JsonbValue *) * config->nteams);
	for (i = 0; i < config->nteams; i++)
	{
		int			o2 = MmJsonPathPushIndex(path, i);

		ReadTeam(path, getIthJsonbValueFromContainer(teams, i), &config->teams[i], &team_roles[i]);
		for (j = 0; j < i; j++)
			if (strcmp(config->teams[j].name, config->teams[i].name) == 0)
				WITH_KEY(path, "name",
						 MmJsonError(path, "duplicate team name \"%s\"", config->teams[i].name));
		sum_min += config->teams[i].min;
		sum_max += config->teams[i].max;
		MmJsonPathPop(path, o2);
	}
	if (with_match_size)
	{
		/* Both given: they must overlap; keep the overlap. */
		if (sum_min > config->match_max)
			MmJsonError(path, "the teams' min add up to %d, more than match_size.max (%d)",
						sum_min, config->match_max);
		if (sum_max < config->match_min)
			MmJsonError(path, "the teams' max add up to %d, less than match_size.min (%d)",
						sum_max, config->match_min);
		config->match_min = Max(config->match_min, sum_min);
		config->match_max = Min(config->match_max, sum_max);
	}
	else
	{
		/* match_size taken from the teams. */
		if (sum_max > MM_MAX_MATCH_SIZE)
			MmJsonError(path, "the teams' max add up to %d, more than the limit of %d players per match",
						sum_max, MM_MAX_MATCH_SIZE);
		config->match_min = sum_min;
		config->match_max = sum_max;
	}
	MmJsonPathPop(path, o);

	/*
	 * A party always plays on one team, and the other teams still need
	 * their minimum, so the largest party is the largest team max that
	 * leaves room for the other teams' min within match_max.
	 */
	config->max_party_size = 0;
	for (i = 0; i < config->nteams; i++)
	{
		int			room = config->match_max - (sum_min - config->teams[i].min);
		int			fits = Min(config->teams[i].max, room);

		config->max_party_size = Max(config->max_party_size, fits);
	}
	return team_roles;
}

/*
 * Reads "rating": the system, the pool and the keys mm.report_result reads.
 */
static void
ReadRating(MmJsonPath *path, JsonbValue *v, MmQueueConfig *config)
{
	MmJsonField rf[] = {{"system"}, {"pool"}, {"boost"}, {"leavers_lose"}, {"per_role"}};
	JsonbValue *rv;
	int			o = MmJsonPathPushKey(path, "rating", 6);

	MmJsonReadObject(path, v, rf, lengthof_fields(rf));
	if (!(rv = MmJsonGet(rf, lengthof(rf), "system")))
		MmConfigMissingKey(path, "system", NULL);
	WITH_KEY(path, "system",
			 config->rating_system = MmJsonString(path, rv, 0, MM_MAX_ATTRIBUTE_LENGTH);
			 if (strcmp(config->rating_system, "elo") != 0 &&
				 strcmp(config->rating_system, "glicko2") != 0 &&
				 strcmp(config->rating_system, "openskill") != 0)
				 MmJsonError(path, "must be one of elo, glicko2, openskill"));
	if ((rv = MmJsonGet(rf, lengthof(rf), "pool")))
		WITH_KEY(path, "pool", config->rating_pool = MmConfigReadName(path, rv));
	/* read by mm.report_result: only checked here */
	if ((rv = MmJsonGet(rf, lengthof(rf), "boost")))
		WITH_KEY(path, "boost", (void) MmJsonBool(path, rv));
	if ((rv = MmJsonGet(rf, lengthof(rf), "leavers_lose")))
		WITH_KEY(path, "leavers_lose", (void) MmJsonBool(path, rv));
	if ((rv = MmJsonGet(rf, lengthof(rf), "per_role")))
		WITH_KEY(path, "per_role",
				 if (MmJsonBool(path, rv))
				 {
					 if (config->roles == NULL)
						 MmJsonError(path, "needs roles: give the teams \"roles\"");
					 config->roles->per_role_rating = true;
				 });
	MmJsonPathPop(path, o);
}

/*
 * Reads "statistics".
 */
static void
ReadStatistics(MmJsonPath *path, JsonbValue *v, MmQueueConfig *config)
{
	MmJsonField sf[] = {{"show_player_count"}, {"show_time_to_match"}};
	JsonbValue *sv;
	int			o = MmJsonPathPushKey(path, "statistics", 10);

	MmJsonReadObject(path, v, sf, lengthof_fields(sf));
	if ((sv = MmJsonGet(sf, lengthof(sf), "show_player_count")))
		WITH_KEY(path, "show_player_count", config->show_player_count = MmJsonBool(path, sv));
	if ((sv = MmJsonGet(sf, lengthof(sf), "show_time_to_match")))
		WITH_KEY(path, "show_time_to_match", config->show_time_to_match = MmJsonBool(path, sv));
	MmJsonPathPop(path, o);
}

/*
 * Reads "rules": each rule, then the compound statements and the rating
 * sources across them.
 */
static void
ReadRules(MmJsonPath *path, JsonbValue *v, MmQueueConfig *config)
{
	JsonbContainer *rules;
	int			o = MmJsonPathPushKey(path, "rules", 5);
	int			i,
				j;

	rules = MmJsonArray(path, v, 0, MM_MAX_RULES, &config->nrules);
	config->rules = palloc0(sizeof(MmRuleConfig) * Max(config->nrules, 1));
	for (i = 0; i < config->nrules; i++)
	{
		int			o2 = MmJsonPathPushIndex(path, i);

		MmConfigReadRule(path, getIthJsonbValueFromContainer(rules, i), &config->rules[i]);
		if (config->rules[i].type == MM_RULE_ROLE_DIFFERENCE &&
			(config->roles == NULL || config->nteams == 0))
			WITH_KEY(path, "type",
					 MmJsonErrorHint(path, "Give each team \"roles\".",
									 "rule type role_difference requires teams with roles"));
		/* the tick would skip them silently in a free-for-all */
		if (config->nteams == 0 &&
			(config->rules[i].type == MM_RULE_TEAM_DIFFERENCE ||
			 config->rules[i].type == MM_RULE_TEAM_SIZE_BALANCE ||
			 config->rules[i].type == MM_RULE_TEAM_TICKET_SIZE_SIMILARITY))
			WITH_KEY(path, "type",
					 MmJsonErrorHint(path, "Give the queue \"teams\", or use a difference rule for a free-for-all.",
									 "rule type %s requires teams",
									 MmRuleTypeNames[config->rules[i].type]));
		for (j = 0; j < i; j++)
			if (strcmp(config->rules[j].name, config->rules[i].name) == 0)
				WITH_KEY(path, "name",
						 MmJsonError(path, "duplicate rule name \"%s\"", config->rules[i].name));
		MmJsonPathPop(path, o2);
	}
	MmJsonPathPop(path, o);
	MmConfigParseCompounds(path, config);
	ParseRatingSources(path, config, rules);
}

/*
 * Reads "algorithm": strategy, batching, sort attributes, expansion age.
 */
static void
ReadAlgorithm(MmJsonPath *path, JsonbValue *v, MmQueueConfig *config)
{
	MmJsonField af[] = {{"strategy"}, {"balanced_attribute"}, {"batching_preference"},
	{"sort_by_attributes"}, {"expansion_age_selection"}};
	JsonbValue *av;
	char	   *str;
	int			o = MmJsonPathPushKey(path, "algorithm", 9);

	MmJsonReadObject(path, v, af, lengthof_fields(af));
	if ((av = MmJsonGet(af, lengthof(af), "strategy")))
		WITH_KEY(path, "strategy",
				 str = MmJsonString(path, av, 0, MM_MAX_ATTRIBUTE_LENGTH);
				 if (strcmp(str, "balanced") == 0)
				 config->balanced = true;
				 else if (strcmp(str, "exhaustive") != 0)
				 MmJsonError(path, "must be one of exhaustive, balanced"));
	if ((av = MmJsonGet(af, lengthof(af), "balanced_attribute")))
	{
		MmRuleConfig tmp;

		if (!config->balanced)
			WITH_KEY(path, "balanced_attribute",
					 MmJsonError(path, "is allowed only with \"strategy\": \"balanced\""));
		memset(&tmp, 0, sizeof(tmp));
		WITH_KEY(path, "balanced_attribute", MmConfigReadAttribute(path, av, &tmp));
		config->balanced_attribute = tmp.attribute;
		config->balanced_depth = tmp.attribute_depth;
		config->balanced_path = tmp.attribute_path;
		/* read like a difference rule's attribute; a missing value is the match's average */
		config->balanced_rule = palloc0(sizeof(MmRuleConfig));
		config->balanced_rule->name = "balanced_attribute";
		config->balanced_rule->type = MM_RULE_DIFFERENCE;
		config->balanced_rule->weight = 0;
		config->balanced_rule->attribute = tmp.attribute;
		config->balanced_rule->attribute_depth = tmp.attribute_depth;
		config->balanced_rule->attribute_path = tmp.attribute_path;
		config->balanced_rule->missing_matches_any = true;
		config->balanced_rule->seconds_until_optional = -1;
	}
	else if (config->balanced)
		MmConfigMissingKey(path, "balanced_attribute", "with \"strategy\": \"balanced\"");
	if (config->balanced && config->nteams == 0)
		WITH_KEY(path, "strategy",
				 MmJsonError(path, "balanced needs teams"));
	config->batching = MM_BATCHING_RULES;
	if ((av = MmJsonGet(af, lengthof(af), "batching_preference")))
		WITH_KEY(path, "batching_preference",
				 str = MmJsonString(path, av, 0, MM_MAX_ATTRIBUTE_LENGTH);
				 if (strcmp(str, "sorted") == 0)
				 config->batching = MM_BATCHING_SORTED;
				 else if (strcmp(str, "largest_population") == 0)
				 config->batching = MM_BATCHING_LARGEST_POPULATION;
				 else if (strcmp(str, "fastest_region") == 0)
				 config->batching = MM_BATCHING_FASTEST_REGION;
				 else if (strcmp(str, "random") == 0)
				 config->batching = MM_BATCHING_RANDOM;
				 else
				 MmJsonError(path, "must be one of sorted, largest_population, fastest_region, random"));
	if ((av = MmJsonGet(af, lengthof(af), "sort_by_attributes")))
	{
		JsonbContainer *list;
		int			o2 = MmJsonPathPushKey(path, "sort_by_attributes", 18);

		if (config->batching != MM_BATCHING_SORTED)
			MmJsonError(path, "is allowed only with \"batching_preference\": \"sorted\"");
		list = MmJsonArray(path, av, 1, MM_MAX_SORT_ATTRIBUTES, &config->nsort);
		config->sort_rules = palloc0(sizeof(MmRuleConfig) * config->nsort);
		for (int k = 0; k < config->nsort; k++)
		{
			MmRuleConfig *sr = &config->sort_rules[k];
			int			o3 = MmJsonPathPushIndex(path, k);

			MmConfigReadAttribute(path, getIthJsonbValueFromContainer(list, k), sr);
			sr->name = "sort_by_attributes";
			sr->type = MM_RULE_DIFFERENCE;
			sr->missing_matches_any = true;
			sr->seconds_until_optional = -1;
			MmJsonPathPop(path, o3);
		}
		MmJsonPathPop(path, o2);
	}
	else if (config->batching == MM_BATCHING_SORTED)
		MmConfigMissingKey(path, "sort_by_attributes", "with \"batching_preference\": \"sorted\"");
	if ((config->batching == MM_BATCHING_LARGEST_POPULATION ||
		 config->batching == MM_BATCHING_FASTEST_REGION) && config->latency_rule < 0)
		WITH_KEY(path, "batching_preference",
				 MmJsonError(path, "%s needs a latency rule (it ranks by region)",
							 config->batching == MM_BATCHING_FASTEST_REGION ?
							 "fastest_region" : "largest_population"));
	if ((av = MmJsonGet(af, lengthof(af), "expansion_age_selection")))
		WITH_KEY(path, "expansion_age_selection",
				 str = MmJsonString(path, av, 0, MM_MAX_ATTRIBUTE_LENGTH);
				 if (strcmp(str, "newest") == 0)
				 config->newest_age = true;
				 else if (strcmp(str, "oldest") != 0)
				 MmJsonError(path, "must be one of oldest, newest"));
	MmJsonPathPop(path, o);
	if (config->newest_age)
		CheckStepsLoosen(path, config);
}

/*
 * Parses and validates a queue config, with the match function checked by
 * check; see queue_config.h.
 */
MmQueueConfig *
MmParseQueueConfigWith(Jsonb *jb, MmMatchFunctionCheck check)
{
	MmJsonField f[] = {
		{"match_size"}, {"teams"}, {"ticket_timeout_seconds"},
		{"acceptance_timeout_seconds"}, {"rating"}, {"statistics"}, {"rules"},
		{"min_tickets"}, {"auto_backfill"}, {"match_function"}, {"rules_apply_to_proposals"},
		{"algorithm"}, {"live_match_timeout_seconds"}, {"heartbeat_timeout_seconds"},
		{"roles"}, {"autofill"}, {"penalties"}
	};
	MmJsonPath	pathbuf;
	MmJsonPath *path = &pathbuf;
	MmQueueConfig *config = palloc0(sizeof(MmQueueConfig));
	JsonbValue	root;
	JsonbValue *v;
	JsonbValue **team_roles = NULL;
	int			i;

	MmJsonPathInit(path, "queue config");
	if (VARSIZE(jb) > MM_MAX_CONFIG_BYTES)
		MmJsonError(path, "larger than %d bytes", MM_MAX_CONFIG_BYTES);
	MmJsonRoot(jb, &root);
	MmJsonReadObject(path, &root, f, lengthof_fields(f));

	if ((v = MmJsonGet(f, lengthof(f), "match_size")))
		WITH_KEY(path, "match_size", ReadMatchSize(path, v, config));
	else if (!MmJsonGet(f, lengthof(f), "teams"))
		MmConfigMissingKey(path, "match_size", "unless teams are given");

	if ((v = MmJsonGet(f, lengthof(f), "teams")))
		team_roles = ReadTeams(path, v, config, MmJsonGet(f, lengthof(f), "match_size") != NULL);
	else
		config->max_party_size = config->match_max;
	MmConfigReadRoles(path, config, team_roles, MmJsonGet(f, lengthof(f), "roles"),
					  MmJsonGet(f, lengthof(f), "autofill"));

	if ((v = MmJsonGet(f, lengthof(f), "ticket_timeout_seconds")))
		WITH_KEY(path, "ticket_timeout_seconds",
				 config->ticket_timeout_seconds = MmJsonNumber(path, v, 0, true, MM_JSON_MAX_NUMBER));
	if ((v = MmJsonGet(f, lengthof(f), "acceptance_timeout_seconds")))
		WITH_KEY(path, "acceptance_timeout_seconds",
				 config->acceptance_timeout_seconds = MmJsonNumber(path, v, 0, true, MM_JSON_MAX_NUMBER));
	/* the tick's limits on a live match's life and on a ticket's silence */
	if ((v = MmJsonGet(f, lengthof(f), "live_match_timeout_seconds")))
		WITH_KEY(path, "live_match_timeout_seconds",
				 config->live_match_timeout_seconds = MmJsonNumber(path, v, 0, true, MM_MAX_LIFETIME_SECONDS));
	if ((v = MmJsonGet(f, lengthof(f), "heartbeat_timeout_seconds")))
		WITH_KEY(path, "heartbeat_timeout_seconds",
				 config->heartbeat_timeout_seconds = MmJsonNumber(path, v, 0, true, MM_MAX_LIFETIME_SECONDS));

	if ((v = MmJsonGet(f, lengthof(f), "rating")))
		ReadRating(path, v, config);

	if ((v = MmJsonGet(f, lengthof(f), "statistics")))
		ReadStatistics(path, v, config);

	if ((v = MmJsonGet(f, lengthof(f), "rules")))
		ReadRules(path, v, config);

	config->latency_rule = -1;
	for (i = 0; i < config->nrules && config->latency_rule < 0; i++)
		if (config->rules[i].type == MM_RULE_LATENCY)
			config->latency_rule = i;
	if ((v = MmJsonGet(f, lengthof(f), "algorithm")))
		ReadAlgorithm(path, v, config);

	config->low_priority_max_wait = -1;
	if ((v = MmJsonGet(f, lengthof(f), "penalties")))
		WITH_KEY(path, "penalties", ReadPenalties(path, v, config));

	config->min_tickets = 1;
	/* read by mm.leave_match and the tick from the config itself: only checked here */
	if ((v = MmJsonGet(f, lengthof(f), "auto_backfill")))
		WITH_KEY(path, "auto_backfill", (void) MmJsonBool(path, v));
	if ((v = MmJsonGet(f, lengthof(f), "rules_apply_to_proposals")))
		WITH_KEY(path, "rules_apply_to_proposals", (void) MmJsonBool(path, v));
	if ((v = MmJsonGet(f, lengthof(f), "match_function")))
		WITH_KEY(path, "match_function",
				 ReadMatchFunction(path, v, check));

	if ((v = MmJsonGet(f, lengthof(f), "min_tickets")))
		WITH_KEY(path, "min_tickets",
				 config->min_tickets = MmJsonInteger(path, v, 1, MM_MAX_MATCH_SIZE);
				 if (config->min_tickets > config->match_max)
				 MmJsonError(path, "must be <= the largest match (%d players)", config->match_max));

	return config;
}
