/*
 * ticket_parse.h
 *	  A stored ticket's players into the rules' values (ticket_parse.c).
 */
#ifndef MM_TICKET_PARSE_H
#define MM_TICKET_PARSE_H

#include "postgres.h"

#include "utils/jsonb.h"

#include "player_sources.h"
#include "rules.h"

/*
 * Parses a ticket's players jsonb (players: scratch room for
 * MM_MAX_MATCH_SIZE) and extracts its rule values, with each player's
 * server-side values when the queue's rules read them (sources, else NULL).
 * ERROR when the jsonb is not what ticket validation lets in.
 */
extern void MmParseTicket(MmRuleContext *context, MmTicket *ticket, Jsonb *players_jsonb,
						  MmPlayerInput *players, const MmPlayerSources *sources);

/*
 * Parses tickets whose queue's rules read server-side values: loads those
 * for all their players at once (SPI), then parses each.  free_players:
 * pfree each jsonb once parsed.
 */
extern void MmParseTicketsWithSources(MmRuleContext *context, const char *queue, MmTicket *tickets,
									  Jsonb **players_jsonb, int ntickets, bool free_players);

#endif							/* MM_TICKET_PARSE_H */
