/*
 * rules_sql.c
 *	  The rules' SQL diagnostic: mm.rule_threshold(), a rule's expansion step
 *	  and threshold at an age (rule_expansion.c).
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/float.h"

#include "queue_config.h"

PG_FUNCTION_INFO_V1(mm_rule_threshold);

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
	rule = MmQueueConfigFindRule(config, name);
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
	{
		/* a finite number as JSON, non-finite as null */
		appendStringInfoString(&buf, ", \"threshold\": ");
		appendStringInfoString(&buf, isfinite(threshold) ? float8out_internal(threshold) : "null");
	}
	appendStringInfoChar(&buf, '}');
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data)));
}
