# matchmaking: PGXS build.  Warnings-as-errors come from PG_CFLAGS (set by
# test/scripts/common.sh), never hard-coded here, so a newer compiler's new
# warning cannot break a user's build.

EXTENSION = matchmaking
MODULE_big = matchmaking
OBJS = $(patsubst %.c,%.o,$(sort $(wildcard src/*.c)))
# Released scripts (DATA, in released/, installed under their own names) are
# frozen: each is kept so a test can install it and upgrade
# (src/tools/cut_version.sh moves there the scripts of a version it cuts).  The version in development (MM_VERSION) has two
# built scripts: its fresh install from the SQL source tree, src/sql/*.sql in
# name order (one current definition of every object), and its upgrade from
# MM_PREVIOUS: the hand-written table and data changes of
# upgrade/<previous>--<version>/ in name order, with the routines its manifest
# (NN_routines.txt) lists taken from src/sql (src/tools/build_upgrade.pl).
# test/t/050_upgrade.pl proves that both give the same schema.
MM_VERSION = 0.4
MM_PREVIOUS = 0.3
DATA = released/matchmaking--0.1.sql released/matchmaking--0.1--0.2.sql released/matchmaking--0.2.sql \
	released/matchmaking--0.2--0.3.sql released/matchmaking--0.3.sql
DATA_built = matchmaking--$(MM_PREVIOUS)--$(MM_VERSION).sql matchmaking--$(MM_VERSION).sql
PG_CPPFLAGS = -I$(srcdir)/src

# pg_regress: setup first (creates the extension), then every area in order.
# The tests and their output are in test/regress/{sql,expected}; they read
# their helpers with \i sql/include/..., so pg_regress runs in test/regress
# (test/run-tests.sh does).
REGRESS = setup $(filter-out setup,$(sort $(basename $(notdir $(wildcard test/regress/sql/*.sql)))))
REGRESS_OPTS = --inputdir=test/regress --load-extension=plpgsql

# Isolation specs and their output: test/isolation/{specs,expected}.
ISOLATION = $(sort $(basename $(notdir $(wildcard test/isolation/specs/*.spec))))
ISOLATION_OPTS = --inputdir=test/isolation

TAP_TESTS = 1
PROVE_TESTS = $(sort $(wildcard test/t/*.pl))

EXTRA_CLEAN = matchmaking--*.sql.tmp results/ regression.diffs regression.out output_iso/ tmp_check/ $(SIM_PROGRAMS)

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS does not track headers: every object is rebuilt when a header of
# src/ changes (an object built against an older struct breaks the library
# without a warning)
$(OBJS): $(wildcard src/*.h)

# A file of the source tree whose objects are all new in this version is
# part of the upgrade as it is (MM_NEW_IN_VERSION), in src/sql order with the
# manifest's routines: one text for both scripts.  Emptied when a version is
# cut (HACKING.md, "Cutting a version").
MM_NEW_IN_VERSION = $(srcdir)/src/sql/45_ticket_batches.sql $(srcdir)/src/sql/65_penalties.sql \
	$(srcdir)/src/sql/75_ranked_play.sql $(srcdir)/src/sql/77_player_data.sql $(srcdir)/src/sql/82_fairness.sql \
	$(srcdir)/src/sql/85_replay.sql $(srcdir)/src/sql/88_monitoring.sql \
	$(srcdir)/src/sql/89_monitoring_fairness.sql $(srcdir)/src/sql/95_scale_out.sql
MM_UPGRADE_DIR = $(srcdir)/upgrade/$(MM_PREVIOUS)--$(MM_VERSION)

# Fails (and writes nothing) when the manifest names a routine src/sql does
# not define, or a hand-written file creates a routine.
matchmaking--$(MM_PREVIOUS)--$(MM_VERSION).sql: $(srcdir)/src/tools/build_upgrade.pl $(srcdir)/src/tools/MmSql.pm \
		$(wildcard $(MM_UPGRADE_DIR)/*) $(wildcard $(srcdir)/src/sql/*.sql)
	perl $(srcdir)/src/tools/build_upgrade.pl $(srcdir)/src/sql $(MM_UPGRADE_DIR) $(MM_NEW_IN_VERSION) > $@.tmp
	mv $@.tmp $@

# The psql guard first, then every file of src/sql, each after a blank line.
matchmaking--$(MM_VERSION).sql: $(sort $(wildcard $(srcdir)/src/sql/*.sql))
	{ printf '%s\n' '\echo Use "CREATE EXTENSION matchmaking" to load this file. \quit' \
		'-- Built by make from src/sql/*.sql in name order: edit those files, not this one.'; \
	  for f in $^; do printf '\n'; cat "$$f"; done; } > $@

# Lets the test scripts read the lists above.
print-%:
	@echo $($*)

# The simulator and the LISTEN client (test/sim): plain libpq programs, built
# by `make sim` (the demo does), not by `all`, so the extension's build needs
# nothing beyond PGXS.  Same compiler flags as the extension, PG_CFLAGS too.
SIM_PROGRAMS = test/sim/mm_sim test/sim/mm_listen
SIM_CPPFLAGS = -I$(shell $(PG_CONFIG) --includedir)
SIM_LIBS = -L$(shell $(PG_CONFIG) --libdir) -lpq -lm

sim: $(SIM_PROGRAMS)
.PHONY: sim

test/sim/mm_sim: test/sim/mm_sim.c test/sim/sim_db.c test/sim/sim_report.c test/sim/sim.h
	$(CC) $(CFLAGS) $(SIM_CPPFLAGS) -o $@ $(filter %.c,$^) $(LDFLAGS_EX) $(SIM_LIBS)

test/sim/mm_listen: test/sim/mm_listen.c
	$(CC) $(CFLAGS) $(SIM_CPPFLAGS) -o $@ $< $(LDFLAGS_EX) $(SIM_LIBS)
