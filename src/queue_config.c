/*
 * queue_config.c
 *	  Parsing and validation of a queue's configuration (mm.queues.config).
 *
 * MmParseQueueConfig walks the jsonb once and fills an MmQueueConfig; every
 * problem is refused with the JSON path of the first problem (json_walk.c).
 * The tick and the ticket validation only ever read the parsed struct, so a
 * rule type's options are parsed and checked here and nowhere else.
 *
 * Also here: the queue name rule, a rule's threshold at an age (the expansion
 * schedule), the validation trigger on mm.queues and two diagnostic SQL
 * functions (mm.validate_queue_config, mm.rule_threshold).
 */
#include "postgres.h"


#include "access/htup_details.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "json_walk.h"
#include "match_function.h"
#include "queue_config.h"

PG_FUNCTION_INFO_V1(mm_validate_queue_config);
PG_FUNCTION_INFO_V1(mm_rule_threshold);
PG_FUNCTION_INFO_V1(mm_queues_validate);

#define lengthof_fields(f) ((int) lengthof(f))

/*
 * What is wrong with a name (queue, team, rule, rating pool), or NULL when it
 * is valid: 1-64 characters, ^[A-Za-z0-9][A-Za-z0-9_-]*$.
 */
static const char *
NameProblem(const char *name)
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

/*
 * Checks a queue name; raises 42602 invalid_name otherwise.
 */
static void
ValidateQueueName(const char *name)
{
	const char *problem = NameProblem(name);

	if (problem != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("invalid queue name \"%s\": %s", name, problem),
				 errhint("A queue name has 1 to 64 characters: letters, digits, '_' and '-', starting with a letter or a digit.")));
}

/* Reads a name-like string (team, rule, pool) at the current path. */
static char *
ReadName(MmJsonPath *path, JsonbValue *value)
{
	char	   *name;
	const char *problem;

	if (value->type != jbvString)
		MmJsonError(path, "must be a string");
	name = pnstrdup(value->val.string.val, value->val.string.len);
	problem = NameProblem(name);
	if (problem != NULL)
		MmJsonError(path, "%s", problem);
	return name;
}

/*
 * Reads field "key" of an already read object with a reader that needs the
 * path to point at the key.  Helpers below push and pop around each read.
 */
#define WITH_KEY(path, key, stmt) \
	do { \
		int			_old = MmJsonPathPushKey((path), (key), strlen(key)); \
		stmt; \
		MmJsonPathPop((path), _old); \
	} while (0)

/* Raises "is required" for a missing key. */
static void
pg_attribute_noreturn()
MissingKey(MmJsonPath *path, const char *key, const char *why)
{
	MmJsonPathPushKey(path, key, strlen(key));
	if (why)
		MmJsonError(path, "is required %s", why);
	MmJsonError(path, "is required");
}

/* Splits and checks a dotted attribute path, e.g. "stats.skill". */
static void
ReadAttribute(MmJsonPath *path, JsonbValue *value, MmRuleConfig *rule)
{
	char	   *attr = MmJsonString(path, value, 1, MM_MAX_ATTRIBUTE_LENGTH);
	char	   *copy = pstrdup(attr);
	char	   *start = copy;
	int			depth = 0;
	char	  **keys = palloc(sizeof(char *) * MM_MAX_ATTRIBUTE_DEPTH);

	for (;;)
	{
		char	   *dot = strchr(start, '.');

		if (dot)
			*dot = '\0';
		if (*start == '\0')
			MmJsonError(path, "must be a dotted path of non-empty keys, e.g. \"stats.skill\"");
		if (depth == MM_MAX_ATTRIBUTE_DEPTH)
			MmJsonError(path, "has more than %d keys", MM_MAX_ATTRIBUTE_DEPTH);
		keys[depth++] = start;
		if (!dot)
			break;
		start = dot + 1;
	}
	rule->attribute = attr;
	rule->attribute_depth = depth;
	rule->attribute_path = keys;
}

/*
 * A threshold value of an expansion (delta, limit, a step).  team_size_balance
 * counts players, so its thresholds are integers 0..MM_MAX_MATCH_SIZE like
 * its max_difference (the balancer works on int); others are numbers >= 0.
 */
static double
ReadExpansionValue(MmJsonPath *path, JsonbValue *value, const MmRuleConfig *rule)
{
	if (rule->type == MM_RULE_TEAM_SIZE_BALANCE)
		return MmJsonInteger(path, value, 0, MM_MAX_MATCH_SIZE);
	if (rule->type == MM_RULE_SET_INTERSECTION)
		return MmJsonInteger(path, value, 0, 1000000);
	if (rule->type == MM_RULE_COMPARISON)	/* a reference: any number */
		return MmJsonNumber(path, value, -MM_JSON_MAX_NUMBER, false, MM_JSON_MAX_NUMBER);
	return MmJsonNumber(path, value, 0, false, MM_JSON_MAX_NUMBER);
}

/* Parses an "expansion" object of a rule. */
static void
ReadExpansion(MmJsonPath *path, JsonbValue *value, MmRuleConfig *rule)
{
	MmJsonField f[] = {{"every_seconds"}, {"delta"}, {"limit"}, {"steps"}};
	JsonbValue *v;
	MmExpansion *e = &rule->expansion;

	MmJsonReadObject(path, value, f, lengthof_fields(f));

	if (!(v = MmJsonGet(f, lengthof(f), "every_seconds")))
		MissingKey(path, "every_seconds", NULL);
	WITH_KEY(path, "every_seconds",
			 e->every_seconds = MmJsonNumber(path, v, 0, true, MM_JSON_MAX_NUMBER));

	if ((v = MmJsonGet(f, lengthof(f), "steps")))
	{
		JsonbContainer *steps;
		int			i;

		if (MmJsonGet(f, lengthof(f), "delta") || MmJsonGet(f, lengthof(f), "limit"))
			WITH_KEY(path, "steps",
					 MmJsonError(path, "cannot be combined with delta or limit"));
		WITH_KEY(path, "steps",
				 steps = MmJsonArray(path, v, 1, MM_MAX_EXPANSION_STEPS, &e->nsteps));
		e->kind = MM_EXPANSION_CUSTOM;
		e->steps = palloc0(sizeof(double) * e->nsteps);
		e->step_off = palloc0(sizeof(bool) * e->nsteps);
		for (i = 0; i < e->nsteps; i++)
		{
			JsonbValue *step = getIthJsonbValueFromContainer(steps, i);
			int			o1 = MmJsonPathPushKey(path, "steps", 5);
			int			o2 = MmJsonPathPushIndex(path, i);

			if (step->type == jbvNull)
			{
				if (i != e->nsteps - 1)
					MmJsonError(path, "null (rule off) is allowed only as the last step");
				e->step_off[i] = true;
			}
			else if (step->type != jbvNumeric)
				MmJsonError(path, "must be a number or null");
			else
				e->steps[i] = ReadExpansionValue(path, step, rule);
			MmJsonPathPop(path, o2);
			MmJsonPathPop(path, o1);
		}
		return;
	}

	if (rule->type == MM_RULE_COMPARISON)
		MmJsonError(path, "a comparison's expansion gives the reference of each step: use steps");
	if (rule->type == MM_RULE_SET_INTERSECTION)
		MmJsonError(path, "a set_intersection's expansion gives the min_size of each step: use steps");
	if (!(v = MmJsonGet(f, lengthof(f), "delta")))
		MissingKey(path, "delta", "(linear expansion) unless steps are given (custom expansion)");
	e->kind = MM_EXPANSION_LINEAR;
	WITH_KEY(path, "delta", e->delta = ReadExpansionValue(path, v, rule));
	/* a player count never needs more than the largest match: keep it an int */
	e->limit = rule->type == MM_RULE_TEAM_SIZE_BALANCE ? MM_MAX_MATCH_SIZE : get_float8_infinity();
	if ((v = MmJsonGet(f, lengthof(f), "limit")))
	{
		WITH_KEY(path, "limit",
				 e->limit = ReadExpansionValue(path, v, rule);
				 if (e->limit < rule->threshold)
				 MmJsonError(path, "must be >= the rule's base threshold (%s)",
							 float8out_internal(rule->threshold)));
	}
}

static const char *const rule_type_names[] = {
	"string_equality", "difference", "latency", "team_difference", "team_size_balance",
	"match_total", "comparison", "team_ticket_size_similarity", "compound",
	"set_intersection", "blocklist"
};

static const char *const compare_op_names[] = {
	"=", "!=", "<", "<=", ">", ">=", "all_equal", "all_different", "contains"
};

/* Whether a rule type reads a player attribute. */
static bool
RuleHasAttribute(MmRuleType type)
{
	return type == MM_RULE_STRING_EQUALITY || type == MM_RULE_DIFFERENCE ||
		type == MM_RULE_TEAM_DIFFERENCE || type == MM_RULE_MATCH_TOTAL ||
		type == MM_RULE_COMPARISON || type == MM_RULE_SET_INTERSECTION ||
		type == MM_RULE_BLOCKLIST;
}

/*
 * Whether a rule type reads a value of each player (its attribute, or the
 * latencies), so that "default" and "when_missing" apply.
 */
static bool
RuleReadsPlayers(MmRuleType type)
{
	/*
	 * latency: the handler supports both, but ticket validation (tickets.c)
	 * still requires latencies from every player; not offered until it
	 * follows.
	 * blocklist: a player without a list blocks nobody.
	 */
	return RuleHasAttribute(type) && type != MM_RULE_BLOCKLIST;
}

/* The name of the key holding a rule type's threshold, or NULL. */
static const char *
RuleThresholdKey(MmRuleType type)
{
	switch (type)
	{
		case MM_RULE_DIFFERENCE:
		case MM_RULE_TEAM_DIFFERENCE:
			return "max";
		case MM_RULE_LATENCY:
			return "max_ms";
		case MM_RULE_TEAM_SIZE_BALANCE:
			return "max_difference";
		case MM_RULE_COMPARISON:
			return "reference";
		case MM_RULE_SET_INTERSECTION:
			return "min_size";
		case MM_RULE_BLOCKLIST:
			return NULL;
		case MM_RULE_STRING_EQUALITY:
		case MM_RULE_MATCH_TOTAL:
		case MM_RULE_TEAM_TICKET_SIZE_SIMILARITY:
		case MM_RULE_COMPOUND:
			return NULL;
	}
	return NULL;
}

/*
 * The options of the newer rule types, and "min" of difference: read after
 * the common keys and the threshold.
 */
static void
ReadTypeOptions(MmJsonPath *path, MmJsonField *f, int nf, MmRuleConfig *rule)
{
	JsonbValue *v;
	char	   *s;
	int			i;

	switch (rule->type)
	{
		case MM_RULE_DIFFERENCE:
			if ((v = MmJsonGet(f, nf, "min")))
				WITH_KEY(path, "min",
						 rule->min = MmJsonNumber(path, v, 0, false, MM_JSON_MAX_NUMBER);
						 if (rule->min > rule->threshold)
						 MmJsonError(path, "must be <= max (%s)", float8out_internal(rule->threshold));
						 rule->has_min = true);
			break;
		case MM_RULE_MATCH_TOTAL:
			/* counts or amounts, >= 0: the max is checked as tickets join */
			if ((v = MmJsonGet(f, nf, "min")))
				WITH_KEY(path, "min",
						 rule->min = MmJsonNumber(path, v, 0, false, MM_JSON_MAX_NUMBER);
						 rule->has_min = true);
			if ((v = MmJsonGet(f, nf, "max")))
				WITH_KEY(path, "max",
						 rule->max = MmJsonNumber(path, v, 0, false, MM_JSON_MAX_NUMBER);
						 if (rule->has_min && rule->max < rule->min)
						 MmJsonError(path, "must be >= min (%s)", float8out_internal(rule->min));
						 rule->has_max = true);
			if (!rule->has_min && !rule->has_max)
				MissingKey(path, "max", "(or min) for rule type match_total");
			/* the threshold is how far an expansion widens [min, max] */
			rule->threshold = 0;
			break;
		case MM_RULE_LATENCY:
			if ((v = MmJsonGet(f, nf, "max_distance")))
				WITH_KEY(path, "max_distance",
						 rule->max_distance = MmJsonNumber(path, v, 0, false, MM_JSON_MAX_NUMBER);
						 rule->has_max_distance = true);
			rule->region_choice = MM_REGION_LOWEST_WORST;
			if ((v = MmJsonGet(f, nf, "region_choice")))
				WITH_KEY(path, "region_choice",
						 s = MmJsonString(path, v, 0, MM_MAX_ATTRIBUTE_LENGTH);
						 if (strcmp(s, "lowest_worst") == 0)
						 rule->region_choice = MM_REGION_LOWEST_WORST;
						 else if (strcmp(s, "lowest_average") == 0)
						 rule->region_choice = MM_REGION_LOWEST_AVERAGE;
						 else
						 MmJsonError(path, "must be one of lowest_worst, lowest_average"));
			break;
		case MM_RULE_COMPARISON:
			if (!(v = MmJsonGet(f, nf, "operator")))
				MissingKey(path, "operator", "for rule type comparison");
			WITH_KEY(path, "operator",
					 s = MmJsonString(path, v, 0, MM_MAX_ATTRIBUTE_LENGTH);
					 for (i = 0; i < (int) lengthof(compare_op_names); i++)
						 if (strcmp(s, compare_op_names[i]) == 0)
							 break;
					 if (i == (int) lengthof(compare_op_names))
						 MmJsonError(path, "must be one of =, !=, <, <=, >, >=, all_equal, all_different, contains"));
			rule->compare_op = (MmCompareOp) i;
			if (rule->compare_op == MM_CMP_ALL_EQUAL || rule->compare_op == MM_CMP_ALL_DIFFERENT)
			{
				if (MmJsonGet(f, nf, "reference"))
					WITH_KEY(path, "reference",
							 MmJsonError(path, "is not allowed with operator %s",
										 compare_op_names[rule->compare_op]));
				if (MmJsonGet(f, nf, "expansion"))
					WITH_KEY(path, "expansion",
							 MmJsonError(path, "is not allowed with operator %s (use seconds_until_optional)",
										 compare_op_names[rule->compare_op]));
			}
			else
			{
				if (!(v = MmJsonGet(f, nf, "reference")))
					MissingKey(path, "reference", psprintf("with operator %s",
														   compare_op_names[rule->compare_op]));
				if (rule->compare_op == MM_CMP_CONTAINS && v->type != jbvString)
					WITH_KEY(path, "reference",
							 MmJsonError(path, "must be a string with operator contains"));
				if (rule->compare_op == MM_CMP_CONTAINS && MmJsonGet(f, nf, "default"))
					WITH_KEY(path, "default",
							 MmJsonError(path, "is not allowed with operator contains (use when_missing)"));
				if (v->type == jbvString)
				{
					/* strings compare for (in)equality, or membership of a list */
					WITH_KEY(path, "reference",
							 rule->reference_string = MmJsonString(path, v, 0, MM_MAX_ATTRIBUTE_LENGTH);
							 if (rule->compare_op != MM_CMP_EQ && rule->compare_op != MM_CMP_NE &&
								 rule->compare_op != MM_CMP_CONTAINS)
								 MmJsonError(path, "a string reference allows only the operators =, != and contains");
							 if (MmJsonGet(f, nf, "expansion"))
								 MmJsonError(path, "a string reference does not expand (use seconds_until_optional)"));
					rule->threshold = 1;
				}
				else
					WITH_KEY(path, "reference",
							 rule->threshold = MmJsonNumber(path, v, -MM_JSON_MAX_NUMBER, false,
															MM_JSON_MAX_NUMBER));
			}
			break;
		case MM_RULE_COMPOUND:
			if (!(v = MmJsonGet(f, nf, "statement")))
				MissingKey(path, "statement", "for rule type compound");
			WITH_KEY(path, "statement",
					 rule->statement = MmJsonString(path, v, 1, 4096));
			break;
		default:
			break;
	}
}

/* Parses one element of "rules". */
static void
ReadRule(MmJsonPath *path, JsonbValue *value, MmRuleConfig *rule)
{
	MmJsonField f[] = {
		{"name"}, {"type"}, {"weight"}, {"attribute"}, {"source"}, {"default"},
		{"when_missing"}, {"seconds_until_optional"}, {"max"}, {"max_ms"},
		{"max_difference"}, {"merge"}, {"expansion"}, {"min"}, {"max_distance"},
		{"region_choice"}, {"operator"}, {"reference"}, {"statement"}, {"min_size"},
		{"widen_by_rd"}
	};
	JsonbValue *v;
	char	   *s;
	int			i;
	const char *threshold_key;
	const char *type_name;

	MmJsonReadObject(path, value, f, lengthof_fields(f));
	memset(rule, 0, sizeof(MmRuleConfig));

	if (!(v = MmJsonGet(f, lengthof(f), "name")))
		MissingKey(path, "name", NULL);
	WITH_KEY(path, "name", rule->name = ReadName(path, v));

	if (!(v = MmJsonGet(f, lengthof(f), "type")))
		MissingKey(path, "type", NULL);
	WITH_KEY(path, "type",
			 s = MmJsonString(path, v, 0, MM_MAX_ATTRIBUTE_LENGTH);
			 for (i = 0; i < (int) lengthof(rule_type_names); i++)
				 if (strcmp(s, rule_type_names[i]) == 0)
					 break;
			 if (i == (int) lengthof(rule_type_names))
				 MmJsonError(path, "must be one of string_equality, difference, latency, team_difference, team_size_balance, match_total, comparison, team_ticket_size_similarity, compound, set_intersection, blocklist"));
	rule->type = (MmRuleType) i;
	type_name = rule_type_names[i];
	threshold_key = RuleThresholdKey(rule->type);

	/* Keys that belong to other rule types. */
	{
		static const char *const typed_keys[] = {
			"attribute", "default", "when_missing", "max", "max_ms", "max_difference",
			"merge", "expansion", "min", "max_distance", "region_choice", "operator",
			"reference", "statement", "min_size"
		};

		for (i = 0; i < (int) lengthof(typed_keys); i++)
		{
			const char *key = typed_keys[i];
			bool		allowed;

			if (!MmJsonGet(f, lengthof(f), key))
				continue;
			if (strcmp(key, "attribute") == 0)
				allowed = RuleHasAttribute(rule->type);
			else if (strcmp(key, "default") == 0 || strcmp(key, "when_missing") == 0)
				allowed = RuleReadsPlayers(rule->type);
			else if (strcmp(key, "merge") == 0)
				allowed = rule->type == MM_RULE_DIFFERENCE;
			else if (strcmp(key, "expansion") == 0)
				allowed = rule->type != MM_RULE_STRING_EQUALITY &&
					rule->type != MM_RULE_TEAM_TICKET_SIZE_SIMILARITY &&
					rule->type != MM_RULE_COMPOUND && rule->type != MM_RULE_BLOCKLIST;
			else if (strcmp(key, "min") == 0)
				allowed = rule->type == MM_RULE_DIFFERENCE || rule->type == MM_RULE_MATCH_TOTAL;
			else if (strcmp(key, "max") == 0 && rule->type == MM_RULE_MATCH_TOTAL)
				allowed = true;
			else if (strcmp(key, "max_distance") == 0 || strcmp(key, "region_choice") == 0)
				allowed = rule->type == MM_RULE_LATENCY;
			else if (strcmp(key, "operator") == 0)
				allowed = rule->type == MM_RULE_COMPARISON;
			else if (strcmp(key, "statement") == 0)
				allowed = rule->type == MM_RULE_COMPOUND;
			else
				allowed = threshold_key != NULL && strcmp(key, threshold_key) == 0;
			if (!allowed)
				WITH_KEY(path, key,
						 MmJsonError(path, "is not allowed for rule type %s", type_name));
		}
	}

	rule->weight = 1.0;
	if ((v = MmJsonGet(f, lengthof(f), "weight")))
		WITH_KEY(path, "weight", rule->weight = MmJsonNumber(path, v, 0, false, MM_JSON_MAX_NUMBER));

	/*
	 * Where the players' values come from: the ticket (what the client
	 * sent), mm.players.attributes (set by the server), or the stored
	 * rating in the queue's pool (checked against "rating" by the caller).
	 */
	rule->source = MM_SOURCE_TICKET;
	if ((v = MmJsonGet(f, lengthof(f), "source")))
		WITH_KEY(path, "source",
				 s = MmJsonString(path, v, 0, MM_MAX_ATTRIBUTE_LENGTH);
				 if (strcmp(s, "player") == 0)
					 rule->source = MM_SOURCE_PLAYER;
				 else if (strcmp(s, "rating") == 0)
					 rule->source = MM_SOURCE_RATING;
				 else if (strcmp(s, "ticket") != 0)
					 MmJsonError(path, "must be one of ticket, player, rating");
				 if (rule->source != MM_SOURCE_TICKET && !RuleHasAttribute(rule->type))
					 MmJsonError(path, "is not allowed for rule type %s (it reads no attribute)", type_name);
				 if (rule->source == MM_SOURCE_RATING &&
					 rule->type != MM_RULE_DIFFERENCE && rule->type != MM_RULE_TEAM_DIFFERENCE &&
					 rule->type != MM_RULE_MATCH_TOTAL && rule->type != MM_RULE_COMPARISON)
					 MmJsonError(path, "\"rating\" is a number: it suits difference, team_difference, match_total and comparison rules"));

	if (RuleHasAttribute(rule->type) && rule->source == MM_SOURCE_RATING)
	{
		/* the rating's own fields: rating (mu for OpenSkill) by default */
		JsonbValue	rating = {.type = jbvString, .val.string = {.len = 6, .val = "rating"}};

		v = MmJsonGet(f, lengthof(f), "attribute");
		WITH_KEY(path, "attribute",
				 ReadAttribute(path, v ? v : &rating, rule);
				 if (strcmp(rule->attribute, "rating") != 0 && strcmp(rule->attribute, "rd") != 0 &&
					 strcmp(rule->attribute, "mu") != 0 && strcmp(rule->attribute, "sigma") != 0)
					 MmJsonError(path, "must be one of rating, rd, mu, sigma with \"source\": \"rating\""));
	}
	else if (RuleHasAttribute(rule->type))
	{
		if (!(v = MmJsonGet(f, lengthof(f), "attribute")))
			MissingKey(path, "attribute", psprintf("for rule type %s", type_name));
		WITH_KEY(path, "attribute", ReadAttribute(path, v, rule));
		if (rule->type == MM_RULE_SET_INTERSECTION || rule->type == MM_RULE_BLOCKLIST)
		{
			rule->list_attribute = rule->attribute;
			rule->attribute = NULL;
		}
	}
	if (RuleReadsPlayers(rule->type))
	{
		if ((v = MmJsonGet(f, lengthof(f), "default")))
		{
			if (MmJsonGet(f, lengthof(f), "when_missing"))
				WITH_KEY(path, "when_missing", MmJsonError(path, "cannot be combined with default"));
			rule->has_default = true;
			if (rule->type == MM_RULE_SET_INTERSECTION)
			{
				JsonbContainer *list;
				int			o = MmJsonPathPushKey(path, "default", 7);

				list = MmJsonArray(path, v, 0, 10000, &rule->ndefault_list);
				rule->default_list = palloc(sizeof(char *) * Max(rule->ndefault_list, 1));
				for (int k = 0; k < rule->ndefault_list; k++)
				{
					int			o2 = MmJsonPathPushIndex(path, k);

					rule->default_list[k] = MmJsonString(path, getIthJsonbValueFromContainer(list, k),
														 0, MM_MAX_ATTRIBUTE_LENGTH);
					MmJsonPathPop(path, o2);
				}
				MmJsonPathPop(path, o);
			}
			else if (rule->type == MM_RULE_STRING_EQUALITY ||
					 (rule->type == MM_RULE_COMPARISON && MmJsonGet(f, lengthof(f), "reference") &&
					  MmJsonGet(f, lengthof(f), "reference")->type == jbvString))
			{
				rule->default_is_string = true;
				WITH_KEY(path, "default",
						 rule->default_string = MmJsonString(path, v, 0, MM_MAX_ATTRIBUTE_LENGTH));
			}
			else if (rule->type == MM_RULE_LATENCY || rule->type == MM_RULE_MATCH_TOTAL)
				WITH_KEY(path, "default",
						 rule->default_number = MmJsonNumber(path, v, 0, false, MM_JSON_MAX_NUMBER));
			else
				WITH_KEY(path, "default",
						 rule->default_number = MmJsonNumber(path, v, -MM_JSON_MAX_NUMBER, false, MM_JSON_MAX_NUMBER));
		}
		if ((v = MmJsonGet(f, lengthof(f), "when_missing")))
			WITH_KEY(path, "when_missing",
					 if (v->type != jbvString ||
						 v->val.string.len != 9 || memcmp(v->val.string.val, "match_any", 9) != 0)
					 MmJsonError(path, "must be \"match_any\"");
					 rule->missing_matches_any = true);
	}

	rule->seconds_until_optional = -1;
	if ((v = MmJsonGet(f, lengthof(f), "seconds_until_optional")))
		WITH_KEY(path, "seconds_until_optional",
				 rule->seconds_until_optional = MmJsonNumber(path, v, 0, false, MM_JSON_MAX_NUMBER));

	if (threshold_key != NULL && rule->type != MM_RULE_COMPARISON)
	{
		if (!(v = MmJsonGet(f, lengthof(f), threshold_key)))
			MissingKey(path, threshold_key, psprintf("for rule type %s", type_name));
		if (rule->type == MM_RULE_TEAM_SIZE_BALANCE)
			WITH_KEY(path, threshold_key,
					 rule->threshold = MmJsonInteger(path, v, 0, MM_MAX_MATCH_SIZE));
		else if (rule->type == MM_RULE_SET_INTERSECTION)
			WITH_KEY(path, threshold_key,
					 rule->threshold = MmJsonInteger(path, v, 0, 1000000));
		else
			WITH_KEY(path, threshold_key,
					 rule->threshold = MmJsonNumber(path, v, 0, false, MM_JSON_MAX_NUMBER));
	}

	ReadTypeOptions(path, f, lengthof(f), rule);

	rule->merge = MM_MERGE_AVERAGE;
	if ((v = MmJsonGet(f, lengthof(f), "merge")))
		WITH_KEY(path, "merge",
				 s = MmJsonString(path, v, 0, MM_MAX_ATTRIBUTE_LENGTH);
				 if (strcmp(s, "average") == 0)
					 rule->merge = MM_MERGE_AVERAGE;
				 else if (strcmp(s, "min") == 0)
					 rule->merge = MM_MERGE_MIN;
				 else if (strcmp(s, "max") == 0)
					 rule->merge = MM_MERGE_MAX;
				 else
					 MmJsonError(path, "must be one of average, min, max"));

	rule->expansion.kind = MM_EXPANSION_NONE;
	if ((v = MmJsonGet(f, lengthof(f), "expansion")))
		WITH_KEY(path, "expansion", ReadExpansion(path, v, rule));
}

/* Parses "match_size". */
static void
ReadMatchSize(MmJsonPath *path, JsonbValue *value, MmQueueConfig *config)
{
	MmJsonField f[] = {{"min"}, {"max"}};
	JsonbValue *v;

	MmJsonReadObject(path, value, f, lengthof_fields(f));
	if (!(v = MmJsonGet(f, lengthof(f), "min")))
		MissingKey(path, "min", NULL);
	WITH_KEY(path, "min", config->match_min = MmJsonInteger(path, v, 2, MM_MAX_MATCH_SIZE));
	config->match_size_min = config->match_min;
	if (!(v = MmJsonGet(f, lengthof(f), "max")))
		MissingKey(path, "max", NULL);
	WITH_KEY(path, "max",
			 config->match_max = MmJsonInteger(path, v, 2, MM_MAX_MATCH_SIZE);
			 if (config->match_max < config->match_min)
				 MmJsonError(path, "must be >= match_size.min (%d)", config->match_min));
}

/* Parses one element of "teams". */
static void
ReadTeam(MmJsonPath *path, JsonbValue *value, MmTeamConfig *team)
{
	MmJsonField f[] = {{"name"}, {"min"}, {"max"}, {"expansion"}};
	JsonbValue *v;

	MmJsonReadObject(path, value, f, lengthof_fields(f));
	if (!(v = MmJsonGet(f, lengthof(f), "name")))
		MissingKey(path, "name", NULL);
	WITH_KEY(path, "name", team->name = ReadName(path, v));
	if (!(v = MmJsonGet(f, lengthof(f), "min")))
		MissingKey(path, "min", NULL);
	WITH_KEY(path, "min", team->min = MmJsonInteger(path, v, 1, MM_MAX_MATCH_SIZE));
	if (!(v = MmJsonGet(f, lengthof(f), "max")))
		MissingKey(path, "max", NULL);
	WITH_KEY(path, "max",
			 team->max = MmJsonInteger(path, v, 1, MM_MAX_MATCH_SIZE);
			 if (team->max < team->min)
				 MmJsonError(path, "must be >= the team's min (%d)", team->min));
	team->min_expansion.kind = MM_EXPANSION_NONE;
	if ((v = MmJsonGet(f, lengthof(f), "expansion")))
	{
		MmJsonField ef[] = {{"every_seconds"}, {"steps"}};
		JsonbValue *ev;
		JsonbContainer *steps;
		MmExpansion *e = &team->min_expansion;
		int			o = MmJsonPathPushKey(path, "expansion", 9);

		MmJsonReadObject(path, v, ef, lengthof_fields(ef));
		if (!(ev = MmJsonGet(ef, lengthof(ef), "every_seconds")))
			MissingKey(path, "every_seconds", NULL);
		WITH_KEY(path, "every_seconds",
				 e->every_seconds = MmJsonNumber(path, ev, 0, true, MM_JSON_MAX_NUMBER));
		if (!(ev = MmJsonGet(ef, lengthof(ef), "steps")))
			MissingKey(path, "steps", "(a team's expansion gives its min at each step)");
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

/* The statement parser of compound rules: and(...), or(...), not(x), names. */
typedef struct StatementParser
{
	MmJsonPath *path;
	const char *text;
	int			pos;
	MmQueueConfig *config;
	int			self;			/* the compound's index */
	MmRuleConfig *rule;
	int			nchild_list;
} StatementParser;

static void
SkipSpaces(StatementParser *p)
{
	while (p->text[p->pos] == ' ' || p->text[p->pos] == '\t' || p->text[p->pos] == '\n')
		p->pos++;
}

static void
pg_attribute_noreturn()
StatementError(StatementParser *p, const char *problem)
{
	MmJsonError(p->path, "%s at character %d of \"%s\"", problem, p->pos + 1, p->text);
}

/* Parses one expression; returns its node index. */
static int
ParseStatement(StatementParser *p, int depth)
{
	MmRuleConfig *rule = p->rule;
	int			start;
	int			len;
	int			node;
	char	   *word;

	if (depth > 16)
		StatementError(p, "nested too deeply");
	SkipSpaces(p);
	start = p->pos;
	while ((p->text[p->pos] >= 'a' && p->text[p->pos] <= 'z') ||
		   (p->text[p->pos] >= 'A' && p->text[p->pos] <= 'Z') ||
		   (p->text[p->pos] >= '0' && p->text[p->pos] <= '9') ||
		   p->text[p->pos] == '_' || p->text[p->pos] == '-')
		p->pos++;
	len = p->pos - start;
	if (len == 0)
		StatementError(p, "expected a rule name, and(...), or(...) or not(...)");
	word = pnstrdup(p->text + start, len);
	if (rule->nnodes == MM_MAX_COMPOUND_NODES)
		StatementError(p, "too many terms (at most 64)");
	node = rule->nnodes++;
	SkipSpaces(p);
	if (p->text[p->pos] == '(' &&
		(strcmp(word, "and") == 0 || strcmp(word, "or") == 0 || strcmp(word, "not") == 0))
	{
		int			children[MM_MAX_COMPOUND_NODES];
		int			n = 0;

		rule->nodes[node].op = strcmp(word, "and") == 0 ? MM_COMPOUND_AND :
			strcmp(word, "or") == 0 ? MM_COMPOUND_OR : MM_COMPOUND_NOT;
		p->pos++;
		for (;;)
		{
			if (n == MM_MAX_COMPOUND_NODES)
				StatementError(p, "too many terms (at most 64)");
			children[n++] = ParseStatement(p, depth + 1);
			SkipSpaces(p);
			if (p->text[p->pos] == ',')
			{
				p->pos++;
				continue;
			}
			if (p->text[p->pos] == ')')
			{
				p->pos++;
				break;
			}
			StatementError(p, "expected ',' or ')'");
		}
		if (rule->nodes[node].op == MM_COMPOUND_NOT && n != 1)
			StatementError(p, "not() takes one term");
		rule->nodes[node].nchildren = n;
		rule->nodes[node].first_child = p->nchild_list;
		for (int k = 0; k < n; k++)
			rule->child_list[p->nchild_list++] = children[k];
		return node;
	}
	/* a rule name */
	{
		int			r;
		MmRuleConfig *leaf;

		for (r = 0; r < p->config->nrules; r++)
			if (strcmp(p->config->rules[r].name, word) == 0)
				break;
		if (r == p->config->nrules)
		{
			p->pos = start;
			StatementError(p, psprintf("no rule named \"%s\"", word));
		}
		leaf = &p->config->rules[r];
		if (r == p->self || leaf->type == MM_RULE_COMPOUND)
		{
			p->pos = start;
			StatementError(p, psprintf("rule \"%s\" is a compound: compounds do not nest (write the terms out)", word));
		}
		if (leaf->type == MM_RULE_TEAM_DIFFERENCE || leaf->type == MM_RULE_TEAM_SIZE_BALANCE ||
			leaf->type == MM_RULE_TEAM_TICKET_SIZE_SIMILARITY)
		{
			p->pos = start;
			StatementError(p, psprintf("rule \"%s\" is a team rule: a compound combines rules on the tickets", word));
		}
		if (leaf->in_compound && leaf->compound_owner != p->self)
		{
			p->pos = start;
			StatementError(p, psprintf("rule \"%s\" is already in compound \"%s\"", word,
									   p->config->rules[leaf->compound_owner].name));
		}
		leaf->in_compound = true;
		leaf->compound_owner = p->self;
		rule->nodes[node].op = MM_COMPOUND_RULE;
		rule->nodes[node].rule = r;
		return node;
	}
}

/* Whether a rule can turn off with age (seconds_until_optional, a null step). */
static bool
RuleCanTurnOff(const MmRuleConfig *rule)
{
	if (rule->seconds_until_optional >= 0)
		return true;
	for (int k = 0; k < rule->expansion.nsteps; k++)
		if (rule->expansion.step_off != NULL && rule->expansion.step_off[k])
			return true;
	return false;
}

/*
 * A rule that is off counts as true, so under not() it makes the statement
 * false for good: a rule that can turn off may not be negated (an odd
 * number of not()s above it), or the queue would stop matching once it did.
 */
static void
CheckNegatedLeaves(StatementParser *p, int node, bool negated)
{
	const MmCompoundNode *n = &p->rule->nodes[node];

	if (n->op == MM_COMPOUND_RULE)
	{
		const MmRuleConfig *leaf = &p->config->rules[n->rule];

		if (negated && RuleCanTurnOff(leaf))
			MmJsonError(p->path, "rule \"%s\" is under not() but can turn off (seconds_until_optional or a null step): "
						"an off rule counts as true, so its not() would then never hold", leaf->name);
		return;
	}
	for (int c = 0; c < n->nchildren; c++)
		CheckNegatedLeaves(p, p->rule->child_list[n->first_child + c],
						   n->op == MM_COMPOUND_NOT ? !negated : negated);
}

/* Parses every compound's statement once all rule names are known. */
static void
ParseCompounds(MmJsonPath *path, MmQueueConfig *config)
{
	for (int i = 0; i < config->nrules; i++)
	{
		MmRuleConfig *rule = &config->rules[i];
		StatementParser p;
		int			o,
					o2,
					o3,
					root;

		if (rule->type != MM_RULE_COMPOUND)
			continue;
		o = MmJsonPathPushKey(path, "rules", 5);
		o2 = MmJsonPathPushIndex(path, i);
		o3 = MmJsonPathPushKey(path, "statement", 9);
		rule->nodes = palloc0(sizeof(MmCompoundNode) * MM_MAX_COMPOUND_NODES);
		rule->child_list = palloc0(sizeof(int) * MM_MAX_COMPOUND_NODES);
		rule->nnodes = 0;
		memset(&p, 0, sizeof(p));
		p.path = path;
		p.text = rule->statement;
		p.config = config;
		p.self = i;
		p.rule = rule;
		root = ParseStatement(&p, 0);
		SkipSpaces(&p);
		if (p.text[p.pos] != '\0')
			StatementError(&p, "unexpected text after the statement");
		CheckNegatedLeaves(&p, root, false);
		MmJsonPathPop(path, o3);
		MmJsonPathPop(path, o2);
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
 * Parses and validates a queue config; see queue_config.h.
 */
MmQueueConfig *
MmParseQueueConfig(Jsonb *jb)
{
	MmJsonField f[] = {
		{"match_size"}, {"teams"}, {"ticket_timeout_seconds"},
		{"acceptance_timeout_seconds"}, {"rating"}, {"statistics"}, {"rules"},
		{"min_tickets"}, {"auto_backfill"}, {"match_function"}, {"rules_apply_to_proposals"},
		{"algorithm"}, {"live_match_timeout_seconds"}, {"heartbeat_timeout_seconds"}
	};
	MmJsonPath	pathbuf;
	MmJsonPath *path = &pathbuf;
	MmQueueConfig *config = palloc0(sizeof(MmQueueConfig));
	JsonbValue	root;
	JsonbValue *v;
	int			i,
				j;

	MmJsonPathInit(path, "queue config");
	if (VARSIZE(jb) > MM_MAX_CONFIG_BYTES)
		MmJsonError(path, "larger than %d bytes", MM_MAX_CONFIG_BYTES);
	MmJsonRoot(jb, &root);
	MmJsonReadObject(path, &root, f, lengthof_fields(f));

	if ((v = MmJsonGet(f, lengthof(f), "match_size")))
		WITH_KEY(path, "match_size", ReadMatchSize(path, v, config));
	else if (!MmJsonGet(f, lengthof(f), "teams"))
		MissingKey(path, "match_size", "unless teams are given");

	if ((v = MmJsonGet(f, lengthof(f), "teams")))
	{
		JsonbContainer *teams;
		int			sum_min = 0;
		int			sum_max = 0;
		int			o;

		o = MmJsonPathPushKey(path, "teams", 5);
		teams = MmJsonArray(path, v, 2, MM_MAX_TEAMS, &config->nteams);
		config->teams = palloc0(sizeof(MmTeamConfig) * config->nteams);
		for (i = 0; i < config->nteams; i++)
		{
			int			o2 = MmJsonPathPushIndex(path, i);

			ReadTeam(path, getIthJsonbValueFromContainer(teams, i), &config->teams[i]);
			for (j = 0; j < i; j++)
				if (strcmp(config->teams[j].name, config->teams[i].name) == 0)
					WITH_KEY(path, "name",
							 MmJsonError(path, "duplicate team name \"%s\"", config->teams[i].name));
			sum_min += config->teams[i].min;
			sum_max += config->teams[i].max;
			MmJsonPathPop(path, o2);
		}
		if (MmJsonGet(f, lengthof(f), "match_size"))
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
	}
	else
		config->max_party_size = config->match_max;

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
	{
		MmJsonField rf[] = {{"system"}, {"pool"}, {"boost"}, {"leavers_lose"}};
		JsonbValue *rv;
		int			o = MmJsonPathPushKey(path, "rating", 6);

		MmJsonReadObject(path, v, rf, lengthof_fields(rf));
		if (!(rv = MmJsonGet(rf, lengthof(rf), "system")))
			MissingKey(path, "system", NULL);
		WITH_KEY(path, "system",
				 config->rating_system = MmJsonString(path, rv, 0, MM_MAX_ATTRIBUTE_LENGTH);
				 if (strcmp(config->rating_system, "elo") != 0 &&
					 strcmp(config->rating_system, "glicko2") != 0 &&
					 strcmp(config->rating_system, "openskill") != 0)
					 MmJsonError(path, "must be one of elo, glicko2, openskill"));
		if ((rv = MmJsonGet(rf, lengthof(rf), "pool")))
			WITH_KEY(path, "pool", config->rating_pool = ReadName(path, rv));
		/* read by mm.report_result: only checked here */
		if ((rv = MmJsonGet(rf, lengthof(rf), "boost")))
			WITH_KEY(path, "boost", (void) MmJsonBool(path, rv));
		if ((rv = MmJsonGet(rf, lengthof(rf), "leavers_lose")))
			WITH_KEY(path, "leavers_lose", (void) MmJsonBool(path, rv));
		MmJsonPathPop(path, o);
	}

	if ((v = MmJsonGet(f, lengthof(f), "statistics")))
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

	if ((v = MmJsonGet(f, lengthof(f), "rules")))
	{
		JsonbContainer *rules;
		int			o = MmJsonPathPushKey(path, "rules", 5);

		rules = MmJsonArray(path, v, 0, MM_MAX_RULES, &config->nrules);
		config->rules = palloc0(sizeof(MmRuleConfig) * Max(config->nrules, 1));
		for (i = 0; i < config->nrules; i++)
		{
			int			o2 = MmJsonPathPushIndex(path, i);

			ReadRule(path, getIthJsonbValueFromContainer(rules, i), &config->rules[i]);
			/* the tick would skip them silently in a free-for-all */
			if (config->nteams == 0 &&
				(config->rules[i].type == MM_RULE_TEAM_DIFFERENCE ||
				 config->rules[i].type == MM_RULE_TEAM_SIZE_BALANCE ||
				 config->rules[i].type == MM_RULE_TEAM_TICKET_SIZE_SIMILARITY))
				WITH_KEY(path, "type",
						 MmJsonErrorHint(path, "Give the queue \"teams\", or use a difference rule for a free-for-all.",
										 "rule type %s requires teams",
										 rule_type_names[config->rules[i].type]));
			for (j = 0; j < i; j++)
				if (strcmp(config->rules[j].name, config->rules[i].name) == 0)
					WITH_KEY(path, "name",
							 MmJsonError(path, "duplicate rule name \"%s\"", config->rules[i].name));
			MmJsonPathPop(path, o2);
		}
		MmJsonPathPop(path, o);
		ParseCompounds(path, config);
		ParseRatingSources(path, config, rules);
	}

	config->latency_rule = -1;
	for (i = 0; i < config->nrules && config->latency_rule < 0; i++)
		if (config->rules[i].type == MM_RULE_LATENCY)
			config->latency_rule = i;
	if ((v = MmJsonGet(f, lengthof(f), "algorithm")))
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
			WITH_KEY(path, "balanced_attribute", ReadAttribute(path, av, &tmp));
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
			MissingKey(path, "balanced_attribute", "with \"strategy\": \"balanced\"");
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

				ReadAttribute(path, getIthJsonbValueFromContainer(list, k), sr);
				sr->name = "sort_by_attributes";
				sr->type = MM_RULE_DIFFERENCE;
				sr->missing_matches_any = true;
				sr->seconds_until_optional = -1;
				MmJsonPathPop(path, o3);
			}
			MmJsonPathPop(path, o2);
		}
		else if (config->batching == MM_BATCHING_SORTED)
			MissingKey(path, "sort_by_attributes", "with \"batching_preference\": \"sorted\"");
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

	config->min_tickets = 1;
	/* read by mm.leave_match and the tick from the config itself: only checked here */
	if ((v = MmJsonGet(f, lengthof(f), "auto_backfill")))
		WITH_KEY(path, "auto_backfill", (void) MmJsonBool(path, v));
	if ((v = MmJsonGet(f, lengthof(f), "rules_apply_to_proposals")))
		WITH_KEY(path, "rules_apply_to_proposals", (void) MmJsonBool(path, v));
	if ((v = MmJsonGet(f, lengthof(f), "match_function")))
		WITH_KEY(path, "match_function",
				 (void) MmLookupMatchFunction(MmJsonString(path, v, 1, 2 * NAMEDATALEN + 1), path));

	if ((v = MmJsonGet(f, lengthof(f), "min_tickets")))
		WITH_KEY(path, "min_tickets",
				 config->min_tickets = MmJsonInteger(path, v, 1, MM_MAX_MATCH_SIZE);
				 if (config->min_tickets > config->match_max)
				 MmJsonError(path, "must be <= the largest match (%d players)", config->match_max));

	return config;
}

/*
 * The rule named name, or NULL.
 */
static const MmRuleConfig *
FindRule(const MmQueueConfig *config, const char *name)
{
	int			i;

	for (i = 0; i < config->nrules; i++)
		if (strcmp(config->rules[i].name, name) == 0)
			return &config->rules[i];
	return NULL;
}

/* Appends a finite number as JSON (non-finite as null). */
static void
AppendNumber(StringInfo buf, double x)
{
	if (isfinite(x))
		appendStringInfoString(buf, float8out_internal(x));
	else
		appendStringInfoString(buf, "null");
}

/* Appends "key": "string". */
static void
AppendKeyString(StringInfo buf, const char *key, const char *value, bool comma)
{
	if (comma)
		appendStringInfoString(buf, ", ");
	escape_json(buf, key);
	appendStringInfoString(buf, ": ");
	if (value)
		escape_json(buf, value);
	else
		appendStringInfoString(buf, "null");
}

/* Appends "key": number. */
static void
AppendKeyNumber(StringInfo buf, const char *key, double value)
{
	appendStringInfoString(buf, ", ");
	escape_json(buf, key);
	appendStringInfoString(buf, ": ");
	AppendNumber(buf, value);
}

/*
 * Appends ", key: value" for a key of a source object that is present (the
 * keys read outside the search, which the parsed config does not keep).
 */
static void
AppendGivenKey(StringInfo buf, JsonbContainer *source, const char *key)
{
	JsonbValue *v = source ? getKeyJsonValueFromContainer(source, key, strlen(key), NULL) : NULL;

	if (v == NULL)
		return;
	appendStringInfoString(buf, ", ");
	escape_json(buf, key);
	appendStringInfoString(buf, ": ");
	appendStringInfoString(buf, JsonbToCString(NULL, &JsonbValueToJsonb(v)->root, -1));
}

/*
 * The parsed config as jsonb with every default filled in: what the tick
 * will use (effective match_size, max_party_size, each rule's options),
 * plus the keys of the source read outside the search, as given.
 */
static Jsonb *
QueueConfigToJsonb(const MmQueueConfig *config, Jsonb *source)
{
	JsonbValue *rating_source = getKeyJsonValueFromContainer(&source->root, "rating", 6, NULL);
	StringInfoData buf;
	int			i,
				k;
	static const char *const merge_names[] = {"average", "min", "max"};

	initStringInfo(&buf);
	appendStringInfo(&buf, "{\"match_size\": {\"min\": %d, \"max\": %d}",
					 config->match_min, config->match_max);
	appendStringInfoString(&buf, ", \"teams\": [");
	for (i = 0; i < config->nteams; i++)
	{
		appendStringInfoString(&buf, i > 0 ? ", {" : "{");
		AppendKeyString(&buf, "name", config->teams[i].name, false);
		appendStringInfo(&buf, ", \"min\": %d, \"max\": %d",
						 config->teams[i].min, config->teams[i].max);
		if (config->teams[i].min_expansion.kind == MM_EXPANSION_CUSTOM)
		{
			const MmExpansion *e = &config->teams[i].min_expansion;

			appendStringInfoString(&buf, ", \"expansion\": {\"every_seconds\": ");
			AppendNumber(&buf, e->every_seconds);
			appendStringInfoString(&buf, ", \"steps\": [");
			for (k = 0; k < e->nsteps; k++)
				appendStringInfo(&buf, "%s%d", k > 0 ? ", " : "", (int) e->steps[k]);
			appendStringInfoString(&buf, "]}");
		}
		appendStringInfoChar(&buf, '}');
	}
	appendStringInfo(&buf, "], \"max_party_size\": %d", config->max_party_size);
	/* keys added in 0.3 appear when not at their default */
	if (config->min_tickets > 1)
		appendStringInfo(&buf, ", \"min_tickets\": %d", config->min_tickets);
	if (config->balanced || config->newest_age || config->batching != MM_BATCHING_RULES)
	{
		static const char *const batching_names[] = {
			NULL, "sorted", "largest_population", "fastest_region", "random"
		};

		appendStringInfoString(&buf, ", \"algorithm\": {");
		AppendKeyString(&buf, "strategy", config->balanced ? "balanced" : "exhaustive", false);
		if (config->balanced)
			AppendKeyString(&buf, "balanced_attribute", config->balanced_attribute, true);
		if (config->batching != MM_BATCHING_RULES)
			AppendKeyString(&buf, "batching_preference", batching_names[config->batching], true);
		if (config->nsort > 0)
		{
			appendStringInfoString(&buf, ", \"sort_by_attributes\": [");
			for (k = 0; k < config->nsort; k++)
			{
				if (k > 0)
					appendStringInfoString(&buf, ", ");
				escape_json(&buf, config->sort_rules[k].attribute);
			}
			appendStringInfoChar(&buf, ']');
		}
		AppendKeyString(&buf, "expansion_age_selection", config->newest_age ? "newest" : "oldest", true);
		appendStringInfoChar(&buf, '}');
	}
	AppendGivenKey(&buf, &source->root, "auto_backfill");
	AppendGivenKey(&buf, &source->root, "match_function");
	AppendGivenKey(&buf, &source->root, "rules_apply_to_proposals");
	AppendKeyNumber(&buf, "ticket_timeout_seconds",
					config->ticket_timeout_seconds > 0 ? config->ticket_timeout_seconds : NAN);
	AppendKeyNumber(&buf, "acceptance_timeout_seconds",
					config->acceptance_timeout_seconds > 0 ? config->acceptance_timeout_seconds : NAN);
	/* keys added in 0.4: shown when given */
	if (config->live_match_timeout_seconds > 0)
		AppendKeyNumber(&buf, "live_match_timeout_seconds", config->live_match_timeout_seconds);
	if (config->heartbeat_timeout_seconds > 0)
		AppendKeyNumber(&buf, "heartbeat_timeout_seconds", config->heartbeat_timeout_seconds);
	appendStringInfoString(&buf, ", \"rating\": ");
	if (config->rating_system)
	{
		appendStringInfoChar(&buf, '{');
		AppendKeyString(&buf, "system", config->rating_system, false);
		AppendKeyString(&buf, "pool", config->rating_pool, true);
		if (rating_source != NULL && rating_source->type == jbvBinary)
		{
			AppendGivenKey(&buf, rating_source->val.binary.data, "boost");
			AppendGivenKey(&buf, rating_source->val.binary.data, "leavers_lose");
		}
		appendStringInfoChar(&buf, '}');
	}
	else
		appendStringInfoString(&buf, "null");
	appendStringInfo(&buf, ", \"statistics\": {\"show_player_count\": %s, \"show_time_to_match\": %s}",
					 config->show_player_count ? "true" : "false",
					 config->show_time_to_match ? "true" : "false");
	appendStringInfoString(&buf, ", \"rules\": [");
	for (i = 0; i < config->nrules; i++)
	{
		const MmRuleConfig *r = &config->rules[i];
		const char *threshold_key = RuleThresholdKey(r->type);

		appendStringInfoString(&buf, i > 0 ? ", {" : "{");
		AppendKeyString(&buf, "name", r->name, false);
		AppendKeyString(&buf, "type", rule_type_names[r->type], true);
		AppendKeyNumber(&buf, "weight", r->weight);
		AppendKeyString(&buf, "source", r->source == MM_SOURCE_PLAYER ? "player" :
						r->source == MM_SOURCE_RATING ? "rating" : "ticket", true);
		if (r->widen_by_rd > 0)
			AppendKeyNumber(&buf, "widen_by_rd", r->widen_by_rd);
		if (r->list_attribute)
		{
			AppendKeyString(&buf, "attribute", r->list_attribute, true);
			if (r->has_default)
			{
				appendStringInfoString(&buf, ", \"default\": [");
				for (k = 0; k < r->ndefault_list; k++)
				{
					if (k > 0)
						appendStringInfoString(&buf, ", ");
					escape_json(&buf, r->default_list[k]);
				}
				appendStringInfoChar(&buf, ']');
			}
			if (r->missing_matches_any)
				AppendKeyString(&buf, "when_missing", "match_any", true);
		}
		if (r->attribute)
		{
			AppendKeyString(&buf, "attribute", r->attribute, true);
			if (r->has_default && r->default_is_string)
				AppendKeyString(&buf, "default", r->default_string, true);
			else if (r->has_default)
				AppendKeyNumber(&buf, "default", r->default_number);
			if (r->missing_matches_any)
				AppendKeyString(&buf, "when_missing", "match_any", true);
		}
		AppendKeyNumber(&buf, "seconds_until_optional",
						r->seconds_until_optional >= 0 ? r->seconds_until_optional : NAN);
		if (r->reference_string)
			AppendKeyString(&buf, "reference", r->reference_string, true);
		else if (threshold_key && !(r->type == MM_RULE_COMPARISON &&
									(r->compare_op == MM_CMP_ALL_EQUAL ||
									 r->compare_op == MM_CMP_ALL_DIFFERENT)))
			AppendKeyNumber(&buf, threshold_key, r->threshold);
		if (r->type == MM_RULE_DIFFERENCE)
			AppendKeyString(&buf, "merge", merge_names[r->merge], true);
		if (r->has_min)
			AppendKeyNumber(&buf, "min", r->min);
		if (r->type == MM_RULE_MATCH_TOTAL && r->has_max)
			AppendKeyNumber(&buf, "max", r->max);
		if (r->type == MM_RULE_LATENCY)
		{
			if (r->has_max_distance)
				AppendKeyNumber(&buf, "max_distance", r->max_distance);
			if (r->region_choice == MM_REGION_LOWEST_AVERAGE)
				AppendKeyString(&buf, "region_choice", "lowest_average", true);
		}
		if (r->type == MM_RULE_COMPARISON)
			AppendKeyString(&buf, "operator", compare_op_names[r->compare_op], true);
		if (r->type == MM_RULE_COMPOUND)
			AppendKeyString(&buf, "statement", r->statement, true);
		if (r->in_compound)
			AppendKeyString(&buf, "in_compound", config->rules[r->compound_owner].name, true);
		if (r->expansion.kind == MM_EXPANSION_LINEAR)
		{
			appendStringInfoString(&buf, ", \"expansion\": {\"every_seconds\": ");
			AppendNumber(&buf, r->expansion.every_seconds);
			AppendKeyNumber(&buf, "delta", r->expansion.delta);
			AppendKeyNumber(&buf, "limit", r->expansion.limit);
			appendStringInfoChar(&buf, '}');
		}
		else if (r->expansion.kind == MM_EXPANSION_CUSTOM)
		{
			appendStringInfoString(&buf, ", \"expansion\": {\"every_seconds\": ");
			AppendNumber(&buf, r->expansion.every_seconds);
			appendStringInfoString(&buf, ", \"steps\": [");
			for (k = 0; k < r->expansion.nsteps; k++)
			{
				if (k > 0)
					appendStringInfoString(&buf, ", ");
				AppendNumber(&buf, r->expansion.step_off[k] ? NAN : r->expansion.steps[k]);
			}
			appendStringInfoString(&buf, "]}");
		}
		appendStringInfoChar(&buf, '}');
	}
	appendStringInfoString(&buf, "]}");

	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data)));
}

/*
 * mm.validate_queue_config(config jsonb) RETURNS jsonb: validates a config
 * like a write to mm.queues would, and returns it normalised.
 */
Datum
mm_validate_queue_config(PG_FUNCTION_ARGS)
{
	Jsonb	   *source;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("queue config must not be null")));
	source = PG_GETARG_JSONB_P(0);
	PG_RETURN_JSONB_P(QueueConfigToJsonb(MmParseQueueConfig(source), source));
}

/* Whether a rule has a threshold of its own; see queue_config.h. */
bool
MmRuleHasThreshold(const MmRuleConfig *rule)
{
	switch (rule->type)
	{
		case MM_RULE_STRING_EQUALITY:
		case MM_RULE_TEAM_TICKET_SIZE_SIMILARITY:
		case MM_RULE_COMPOUND:
		case MM_RULE_BLOCKLIST:
			return false;
		case MM_RULE_COMPARISON:
			/* a string reference is matched, not a threshold */
			return rule->compare_op != MM_CMP_ALL_EQUAL &&
				rule->compare_op != MM_CMP_ALL_DIFFERENT && rule->reference_string == NULL;
		default:
			return true;
	}
}

/*
 * mm.rule_threshold(config jsonb, rule text, age_seconds float8) RETURNS
 * jsonb: a diagnostic showing a rule's expansion step at an age, in the form
 * stored in mm.matches.rule_steps: {"step": 1, "threshold": 150} or
 * {"step": 2, "off": true} (string_equality has no threshold).
 */
Datum
mm_rule_threshold(PG_FUNCTION_ARGS)
{
	MmQueueConfig *config = MmParseQueueConfig(PG_GETARG_JSONB_P(0));
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(1));
	double		age = PG_GETARG_FLOAT8(2);
	const MmRuleConfig *rule;
	double		threshold;
	int			step;
	bool		on;
	StringInfoData buf;

	if (!isfinite(age) || age < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("age_seconds must be a finite number >= 0")));
	rule = FindRule(config, name);
	if (rule == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("rule \"%s\" is not in the queue config", name)));
	on = MmRuleThresholdAt(rule, age, &threshold, &step);

	initStringInfo(&buf);
	appendStringInfo(&buf, "{\"step\": %d", step);
	if (!on)
		appendStringInfoString(&buf, ", \"off\": true");
	else if (MmRuleHasThreshold(rule))
		AppendKeyNumber(&buf, "threshold", threshold);
	appendStringInfoChar(&buf, '}');
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data)));
}

/* The config's "match_function" of a row of mm.queues, or NULL. */
static char *
RowMatchFunction(HeapTuple tuple, TupleDesc tupdesc)
{
	bool		isnull;
	Datum		config = heap_getattr(tuple, SPI_fnumber(tupdesc, "config"), tupdesc, &isnull);
	JsonbValue	v;

	if (isnull ||
		getKeyJsonValueFromContainer(&DatumGetJsonbP(config)->root, "match_function",
									 strlen("match_function"), &v) == NULL ||
		v.type != jbvString)
		return NULL;
	return pnstrdup(v.val.string.val, v.val.string.len);
}

/* A text column of a row of mm.queues, or NULL. */
static char *
RowText(HeapTuple tuple, TupleDesc tupdesc, int col)
{
	bool		isnull;
	Datum		value = heap_getattr(tuple, col, tupdesc, &isnull);

	return isnull ? NULL : TextDatumGetCString(value);
}

/*
 * BEFORE INSERT OR UPDATE row trigger on mm.queues: validates the name and
 * the config of every write, also direct INSERT/UPDATE, keeps updated_at
 * current on UPDATE, and sets the role the match function runs as
 * (MmMatchFunctionRoleForWrite).
 */
Datum
mm_queues_validate(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	TupleDesc	tupdesc;
	HeapTuple	tuple;
	Datum		value;
	bool		isnull;
	MemoryContext parse_context;
	MemoryContext old_context;

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		!TRIGGER_FIRED_BEFORE(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		!(TRIGGER_FIRED_BY_INSERT(trigdata->tg_event) || TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event)))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("mm_queues_validate must be a BEFORE INSERT OR UPDATE row trigger")));

	tupdesc = RelationGetDescr(trigdata->tg_relation);
	tuple = TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event) ? trigdata->tg_newtuple : trigdata->tg_trigtuple;

	value = heap_getattr(tuple, SPI_fnumber(tupdesc, "name"), tupdesc, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("queue name must not be null")));
	ValidateQueueName(TextDatumGetCString(value));

	value = heap_getattr(tuple, SPI_fnumber(tupdesc, "config"), tupdesc, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("queue config must not be null")));

	/* Parse in a short-lived context: only the verdict is needed here. */
	parse_context = AllocSetContextCreate(CurrentMemoryContext, "mm queue config",
										  ALLOCSET_SMALL_SIZES);
	old_context = MemoryContextSwitchTo(parse_context);
	(void) MmParseQueueConfig(DatumGetJsonbP(value));
	MemoryContextSwitchTo(old_context);
	MemoryContextDelete(parse_context);

	/* 0.4 on: the role the match function runs as */
	{
		int			col = SPI_fnumber(tupdesc, "match_function_role");

		if (col > 0)
		{
			bool		update = TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event);
			HeapTuple	old_tuple = trigdata->tg_trigtuple;
			char	   *role;
			bool		role_null;
			Datum		role_value;

			role = MmMatchFunctionRoleForWrite(RowMatchFunction(tuple, tupdesc),
											   update ? RowMatchFunction(old_tuple, tupdesc) : NULL,
											   RowText(tuple, tupdesc, col),
											   update ? RowText(old_tuple, tupdesc, col) : NULL);
			role_null = role == NULL;
			role_value = role_null ? (Datum) 0 : CStringGetTextDatum(role);
			tuple = heap_modify_tuple_by_cols(tuple, tupdesc, 1, &col, &role_value, &role_null);
		}
	}

	if (TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event))
	{
		int			col = SPI_fnumber(tupdesc, "updated_at");
		Datum		now = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
		bool		now_null = false;

		tuple = heap_modify_tuple_by_cols(tuple, tupdesc, 1, &col, &now, &now_null);
	}
	return PointerGetDatum(tuple);
}
