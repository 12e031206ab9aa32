"""Runs the psycopg LISTEN example of docs/events.md (test/t/115_python_listen.pl).

listen_driver.py EXAMPLE.py DSN: loads the example as a module (its main
block does not run), listens with its events(conn, timeout=1), and checks
that a quiet second yields None instead of blocking; then, from a second
connection, forms a match, cancels a ticket and sends a forged NOTIFY, and
prints each event the example yields until it is quiet again, one JSON
object a line.
"""
import importlib.util
import json
import sys
import time

import psycopg

spec = importlib.util.spec_from_file_location("example", sys.argv[1])
example = importlib.util.module_from_spec(spec)
spec.loader.exec_module(example)
dsn = sys.argv[2]

with psycopg.connect(dsn, autocommit=True) as conn:
    gen = example.events(conn, timeout=1.0)
    started = time.monotonic()
    first = next(gen)
    print(json.dumps({"quiet": first is None, "waited": round(time.monotonic() - started)}), flush=True)
    with psycopg.connect(dsn, autocommit=True) as other:
        other.execute("""SELECT mm.create_queue('py_duel',
            '{"teams": [{"name": "red", "min": 1, "max": 1}, {"name": "blue", "min": 1, "max": 1}]}')""")
        other.execute("""SELECT mm.create_ticket('py_duel', '[{"id": "py1"}]', '2026-01-01 00:00:00+00'),
                                mm.create_ticket('py_duel', '[{"id": "py2"}]', '2026-01-01 00:00:00+00'),
                                mm.create_ticket('py_duel', '[{"id": "py3"}]', '2026-01-01 00:00:00+00')""")
        other.execute("SELECT mm.tick('py_duel', '2026-01-01 00:00:01+00')")
        other.execute("SELECT pg_notify('mm_events', '{\"event\": \"match_found\", \"queue\": \"forged\"}')")
        other.execute("SELECT mm.cancel_ticket(t.id) FROM mm.tickets_active t WHERE t.queue = 'py_duel'")
    for e in gen:
        if e is None:
            break
        print(json.dumps({"event": e["event"], "queue": e["queue"]}), flush=True)
