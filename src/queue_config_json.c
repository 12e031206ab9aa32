/*
 * queue_config_json.c
 *	  A parsed queue config back as jsonb, every default filled in: what
 *	  mm.validate_queue_config returns.
 */
#include "postgres.h"

#include <math.h>

#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/json.h"
#include "utils/jsonb.h"

#include "queue_config_internal.h"
#include "roles.h"

/*
 * The rule named name, or NULL.
 */
char *
MmQueueConfigMatchFunction(Jsonb *config)
{
	JsonbValue	v;

	if (getKeyJsonValueFromContainer(&config->root, "match_function", strlen("match_function"), &v) == NULL ||
		v.type != jbvString)
		return NULL;
	return pnstrdup(v.val.string.val, v.val.string.len);
}

const MmRuleConfig *
MmQueueConfigFindRule(const MmQueueConfig *config, const char *name)
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

/* ", "roles": [{role: seats, ...}, ...]": a group's compositions, as a list. */
static void
AppendCompositions(StringInfo buf, const MmRolesConfig *roles, int group)
{
	appendStringInfoString(buf, ", \"roles\": [");
	for (int c = 0; c < roles->ncompositions[group]; c++)
	{
		bool		first = true;

		appendStringInfoString(buf, c > 0 ? ", {" : "{");
		for (int r = 0; r < roles->nroles; r++)
		{
			int			seats = roles->compositions[group][c].seats[r];

			if (seats == 0)
				continue;
			if (!first)
				appendStringInfoString(buf, ", ");
			escape_json(buf, roles->names[r]);
			appendStringInfo(buf, ": %d", seats);
			first = false;
		}
		appendStringInfoChar(buf, '}');
	}
	appendStringInfoChar(buf, ']');
}

/* One rule of "rules", every default filled in (i: its index, for the separator). */
static void
AppendRuleJson(StringInfo buf, const MmQueueConfig *config, const MmRuleConfig *r, int i)
{
	static const char *const merge_names[] = {"average", "min", "max"};
	const char *threshold_key = MmRuleThresholdKey(r->type);
	int			k;

	appendStringInfoString(buf, i > 0 ? ", {" : "{");
	AppendKeyString(buf, "name", r->name, false);
	AppendKeyString(buf, "type", MmRuleTypeNames[r->type], true);
	AppendKeyNumber(buf, "weight", r->weight);
	AppendKeyString(buf, "source", r->source == MM_SOURCE_PLAYER ? "player" :
					r->source == MM_SOURCE_RATING ? "rating" : "ticket", true);
	if (r->widen_by_rd > 0)
		AppendKeyNumber(buf, "widen_by_rd", r->widen_by_rd);
	if (r->list_attribute)
	{
		AppendKeyString(buf, "attribute", r->list_attribute, true);
		if (r->has_default)
		{
			appendStringInfoString(buf, ", \"default\": [");
			for (k = 0; k < r->ndefault_list; k++)
			{
				if (k > 0)
					appendStringInfoString(buf, ", ");
				escape_json(buf, r->default_list[k]);
			}
			appendStringInfoChar(buf, ']');
		}
		if (r->missing_matches_any)
			AppendKeyString(buf, "when_missing", "match_any", true);
}
if (r->attribute)
{
	AppendKeyString(buf, "attribute", r->attribute, true);
	if (r->has_default && r->default_is_string)
		AppendKeyString(buf, "default", r->default_string, true);
	else if (r->has_default)
		AppendKeyNumber(buf, "default", r->default_number);
	if (r->missing_matches_any)
		AppendKeyString(buf, "when_missing", "match_any", true);
}
AppendKeyNumber(buf, "seconds_until_optional",
				r->seconds_until_optional >= 0 ? r->seconds_until_optional : NAN);
if (r->reference_string)
	AppendKeyString(buf, "reference", r->reference_string, true);
else if (threshold_key && !(r->type == MM_RULE_COMPARISON &&
							(r->compare_op == MM_CMP_ALL_EQUAL ||
							 r->compare_op == MM_CMP_ALL_DIFFERENT)))
	AppendKeyNumber(buf, threshold_key, r->threshold);
if (r->type == MM_RULE_DIFFERENCE)
	AppendKeyString(buf, "merge", merge_names[r->merge], true);
if (r->has_min)
	AppendKeyNumber(buf, "min", r->min);
if (r->type == MM_RULE_MATCH_TOTAL && r->has_max)
	AppendKeyNumber(buf, "max", r->max);
if (r->type == MM_RULE_LATENCY)
{
	if (r->has_max_distance)
		AppendKeyNumber(buf, "max_distance", r->max_distance);
	if (r->region_choice == MM_REGION_LOWEST_AVERAGE)
		AppendKeyString(buf, "region_choice", "lowest_average", true);
}
if (r->type == MM_RULE_COMPARISON)
	AppendKeyString(buf, "operator", MmCompareOpNames[r->compare_op], true);
if (r->type == MM_RULE_COMPOUND)
	AppendKeyString(buf, "statement", r->statement, true);
if (r->in_compound)
	AppendKeyString(buf, "in_compound", config->rules[r->compound_owner].name, true);
if (r->expansion.kind == MM_EXPANSION_LINEAR)
{
	appendStringInfoString(buf, ", \"expansion\": {\"every_seconds\": ");
	AppendNumber(buf, r->expansion.every_seconds);
	AppendKeyNumber(buf, "delta", r->expansion.delta);
	AppendKeyNumber(buf, "limit", r->expansion.limit);
	appendStringInfoChar(buf, '}');
}
else if (r->expansion.kind == MM_EXPANSION_CUSTOM)
{
	appendStringInfoString(buf, ", \"expansion\": {\"every_seconds\": ");
	AppendNumber(buf, r->expansion.every_seconds);
	appendStringInfoString(buf, ", \"steps\": [");
	for (k = 0; k < r->expansion.nsteps; k++)
	{
		if (k > 0)
			appendStringInfoString(buf, ", ");
		AppendNumber(buf, r->expansion.step_off[k] ? NAN : r->expansion.steps[k]);
	}
	appendStringInfoString(buf, "]}");
}
appendStringInfoChar(buf, '}');
}

/*
 * The parsed config as jsonb with every default filled in: what the tick
 * will use (effective match_size, max_party_size, each rule's options),
 * plus the keys of the source read outside the search, as given.
 */
Jsonb *
MmQueueConfigToJsonb(const MmQueueConfig *config, Jsonb *source)
{
	JsonbValue *rating_source = getKeyJsonValueFromContainer(&source->root, "rating", 6, NULL);
	StringInfoData buf;
	int			i,
				k;

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
		if (config->roles != NULL)
			AppendCompositions(&buf, config->roles, i);
		appendStringInfoChar(&buf, '}');
	}
	appendStringInfo(&buf, "], \"max_party_size\": %d", config->max_party_size);
	if (config->roles != NULL)
	{
		if (config->nteams == 0)
			AppendCompositions(&buf, config->roles, 0);
		if (config->roles->autofill)
		{
			appendStringInfoString(&buf, ", \"autofill\": {\"after_seconds\": ");
			AppendNumber(&buf, config->roles->autofill_after_seconds);
			appendStringInfo(&buf, ", \"protect_games\": %d}", config->roles->protect_games);
		}
	}
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
	/* read by the SQL side as given (65_penalties.sql): shown as given */
	AppendGivenKey(&buf, &source->root, "penalties");
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
		if (config->roles != NULL && config->roles->per_role_rating)
			appendStringInfoString(&buf, ", \"per_role\": true");
		appendStringInfoChar(&buf, '}');
	}
	else
		appendStringInfoString(&buf, "null");
	appendStringInfo(&buf, ", \"statistics\": {\"show_player_count\": %s, \"show_time_to_match\": %s}",
					 config->show_player_count ? "true" : "false",
					 config->show_time_to_match ? "true" : "false");
	appendStringInfoString(&buf, ", \"rules\": [");
	for (i = 0; i < config->nrules; i++)
		AppendRuleJson(&buf, config, &config->rules[i], i);
	appendStringInfoString(&buf, "]}");

	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data)));
}
