/*
 * queue_config_rule.c
 *	  The queue config parser's reading of one rule (an element of "rules"):
 *	  its common keys (name, type, attribute, source, weight, default,
 *	  when_missing, seconds_until_optional), its threshold and expansion, and
 *	  the options of each rule type.
 */
#include "postgres.h"

#include "utils/float.h"
#include "utils/jsonb.h"

#include "json_walk.h"
#include "queue_config_internal.h"

/* Splits and checks a dotted attribute path, e.g. "stats.skill". */
void
MmConfigReadAttribute(MmJsonPath *path, JsonbValue *value, MmRuleConfig *rule)
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
		MmConfigMissingKey(path, "every_seconds", NULL);
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
		MmConfigMissingKey(path, "delta", "(linear expansion) unless steps are given (custom expansion)");
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

const char *const MmRuleTypeNames[] = {
	"string_equality", "difference", "latency", "team_difference", "team_size_balance",
	"match_total", "comparison", "team_ticket_size_similarity", "compound",
	"set_intersection", "blocklist", "role_difference"
};

const char *const MmCompareOpNames[] = {
	"=", "!=", "<", "<=", ">", ">=", "all_equal", "all_different", "contains"
};

/* Whether a rule type reads a player attribute. */
static bool
RuleHasAttribute(MmRuleType type)
{
	return type == MM_RULE_STRING_EQUALITY || type == MM_RULE_DIFFERENCE ||
		type == MM_RULE_TEAM_DIFFERENCE || type == MM_RULE_ROLE_DIFFERENCE || type == MM_RULE_MATCH_TOTAL ||
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
const char *
MmRuleThresholdKey(MmRuleType type)
{
	switch (type)
	{
		case MM_RULE_DIFFERENCE:
		case MM_RULE_TEAM_DIFFERENCE:
		case MM_RULE_ROLE_DIFFERENCE:
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
				MmConfigMissingKey(path, "max", "(or min) for rule type match_total");
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
				MmConfigMissingKey(path, "operator", "for rule type comparison");
			WITH_KEY(path, "operator",
					 s = MmJsonString(path, v, 0, MM_MAX_ATTRIBUTE_LENGTH);
					 for (i = 0; i < (int) lengthof(MmCompareOpNames); i++)
						 if (strcmp(s, MmCompareOpNames[i]) == 0)
							 break;
					 if (i == (int) lengthof(MmCompareOpNames))
						 MmJsonError(path, "must be one of =, !=, <, <=, >, >=, all_equal, all_different, contains"));
			rule->compare_op = (MmCompareOp) i;
			if (rule->compare_op == MM_CMP_ALL_EQUAL || rule->compare_op == MM_CMP_ALL_DIFFERENT)
			{
				if (MmJsonGet(f, nf, "reference"))
					WITH_KEY(path, "reference",
							 MmJsonError(path, "is not allowed with operator %s",
										 MmCompareOpNames[rule->compare_op]));
				if (MmJsonGet(f, nf, "expansion"))
					WITH_KEY(path, "expansion",
							 MmJsonError(path, "is not allowed with operator %s (use seconds_until_optional)",
										 MmCompareOpNames[rule->compare_op]));
			}
			else
			{
				if (!(v = MmJsonGet(f, nf, "reference")))
					MmConfigMissingKey(path, "reference", psprintf("with operator %s",
														   MmCompareOpNames[rule->compare_op]));
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
				MmConfigMissingKey(path, "statement", "for rule type compound");
			WITH_KEY(path, "statement",
					 rule->statement = MmJsonString(path, v, 1, 4096));
			break;
		default:
			break;
	}
}

/* Refuses the keys that belong to other rule types than the rule's. */
static void
CheckTypedKeys(MmJsonPath *path, MmJsonField *f, int nf, const MmRuleConfig *rule,
			   const char *threshold_key, const char *type_name)
{
	static const char *const typed_keys[] = {
		"attribute", "default", "when_missing", "max", "max_ms", "max_difference",
		"merge", "expansion", "min", "max_distance", "region_choice", "operator",
		"reference", "statement", "min_size"
	};
	int			i;

	for (i = 0; i < (int) lengthof(typed_keys); i++)
	{
		const char *key = typed_keys[i];
		bool		allowed;

		if (!MmJsonGet(f, nf, key))
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

/* A rule that reads players: "default" or "when_missing". */
static void
ReadMissingValue(MmJsonPath *path, MmJsonField *f, int nf, MmRuleConfig *rule)
{
	JsonbValue *v;

	if ((v = MmJsonGet(f, nf, "default")))
	{
		if (MmJsonGet(f, nf, "when_missing"))
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
				 (rule->type == MM_RULE_COMPARISON && MmJsonGet(f, nf, "reference") &&
				  MmJsonGet(f, nf, "reference")->type == jbvString))
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
	if ((v = MmJsonGet(f, nf, "when_missing")))
		WITH_KEY(path, "when_missing",
				 if (v->type != jbvString ||
					 v->val.string.len != 9 || memcmp(v->val.string.val, "match_any", 9) != 0)
				 MmJsonError(path, "must be \"match_any\"");
				 rule->missing_matches_any = true);
}

/* Parses one element of "rules". */
void
MmConfigReadRule(MmJsonPath *path, JsonbValue *value, MmRuleConfig *rule)
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
		MmConfigMissingKey(path, "name", NULL);
	WITH_KEY(path, "name", rule->name = MmConfigReadName(path, v));

	if (!(v = MmJsonGet(f, lengthof(f), "type")))
		MmConfigMissingKey(path, "type", NULL);
	WITH_KEY(path, "type",
			 s = MmJsonString(path, v, 0, MM_MAX_ATTRIBUTE_LENGTH);
			 for (i = 0; i < (int) lengthof(MmRuleTypeNames); i++)
				 if (strcmp(s, MmRuleTypeNames[i]) == 0)
					 break;
			 if (i == (int) lengthof(MmRuleTypeNames))
				 MmJsonError(path, "must be one of string_equality, difference, latency, team_difference, team_size_balance, match_total, comparison, team_ticket_size_similarity, compound, set_intersection, blocklist, role_difference"));
	rule->type = (MmRuleType) i;
	type_name = MmRuleTypeNames[i];
	threshold_key = MmRuleThresholdKey(rule->type);

	CheckTypedKeys(path, f, lengthof(f), rule, threshold_key, type_name);

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
					 rule->type != MM_RULE_ROLE_DIFFERENCE &&
					 rule->type != MM_RULE_MATCH_TOTAL && rule->type != MM_RULE_COMPARISON)
					 MmJsonError(path, "\"rating\" is a number: it suits difference, team_difference, role_difference, match_total and comparison rules"));

	if (RuleHasAttribute(rule->type) && rule->source == MM_SOURCE_RATING)
	{
		/* the rating's own fields: rating (mu for OpenSkill) by default */
		JsonbValue	rating = {.type = jbvString, .val.string = {.len = 6, .val = "rating"}};

		v = MmJsonGet(f, lengthof(f), "attribute");
		WITH_KEY(path, "attribute",
				 MmConfigReadAttribute(path, v ? v : &rating, rule);
				 if (strcmp(rule->attribute, "rating") != 0 && strcmp(rule->attribute, "rd") != 0 &&
					 strcmp(rule->attribute, "mu") != 0 && strcmp(rule->attribute, "sigma") != 0)
					 MmJsonError(path, "must be one of rating, rd, mu, sigma with \"source\": \"rating\""));
	}
	else if (RuleHasAttribute(rule->type))
	{
		if (!(v = MmJsonGet(f, lengthof(f), "attribute")))
			MmConfigMissingKey(path, "attribute", psprintf("for rule type %s", type_name));
		WITH_KEY(path, "attribute", MmConfigReadAttribute(path, v, rule));
		if (rule->type == MM_RULE_SET_INTERSECTION || rule->type == MM_RULE_BLOCKLIST)
		{
			rule->list_attribute = rule->attribute;
			rule->attribute = NULL;
		}
	}
	if (RuleReadsPlayers(rule->type))
		ReadMissingValue(path, f, lengthof(f), rule);

	rule->seconds_until_optional = -1;
	if ((v = MmJsonGet(f, lengthof(f), "seconds_until_optional")))
		WITH_KEY(path, "seconds_until_optional",
				 rule->seconds_until_optional = MmJsonNumber(path, v, 0, false, MM_JSON_MAX_NUMBER));

	if (threshold_key != NULL && rule->type != MM_RULE_COMPARISON)
	{
		if (!(v = MmJsonGet(f, lengthof(f), threshold_key)))
			MmConfigMissingKey(path, threshold_key, psprintf("for rule type %s", type_name));
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
