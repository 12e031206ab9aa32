/*
 * queue_config_compound.c
 *	  The queue config parser's reading of compound rules: the statement
 *	  (and(...), or(...), not(x), rule names) parsed into the rule's nodes,
 *	  each name resolved to a rule of the queue.
 */
#include "postgres.h"

#include "json_walk.h"
#include "queue_config_internal.h"

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
			leaf->type == MM_RULE_TEAM_TICKET_SIZE_SIMILARITY || leaf->type == MM_RULE_ROLE_DIFFERENCE)
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
void
MmConfigParseCompounds(MmJsonPath *path, MmQueueConfig *config)
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
