#!/usr/bin/env python3
"""Reference Glicko-2 and Elo outside the database, for test/bench/fairness.sh.

Written from the published algorithms, not from the extension's code:
Glickman, "Example of the Glicko-2 system" (steps 1 to 8, the Illinois
iteration with epsilon 1e-6, every game its own rating period, tau 0.5,
a new player at 1500 / 350 / 0.06), Elo with the FIDE-style K (40 under 30
games, 16 above 2400, else 32).  Each game is predicted from the ratings
before it: Glicko with both deviations combined, 1 / (1 + exp(-g(phi) (mu_a
- mu_b))), g(phi) = 1 / sqrt(1 + 3 phi^2 / pi^2), phi = sqrt(phi_a^2 +
phi_b^2); Elo 1 / (1 + 10^((r_b - r_a) / 400)).  The mean binomial
deviance is the Kaggle chess rating contest's and liglicko2's: -mean(y
log10 p + (1 - y) log10 (1 - p)), p clamped to [0.01, 0.99], y 1, 0.5 or 0.

  fairness_reference.py lichess FILE.csv    games of the Lichess sample
  fairness_reference.py generate N SEED DIR   writes DIR/games.csv and
                                              DIR/skills.csv (true skills)
  fairness_reference.py replay GAMES.csv      the reference over a games file
  fairness_reference.py skills SKILLS.csv RATINGS.json   how close ratings come

A games file has one line per game: white,black,score (1, 0.5, 0 for white),
in the order they were played.  Output: one JSON object.
"""
import csv
import json
import math
import random
import sys

SCALE = 173.7178
EPSILON = 1e-6
TAU = 0.5


def glicko2_update(r, rd, vol, opp_r, opp_rd, score, tau=TAU):
    """One rating period of one game (Glickman's steps 2 to 8)."""
    mu = (r - 1500.0) / SCALE
    phi = rd / SCALE
    mu_j = (opp_r - 1500.0) / SCALE
    phi_j = opp_rd / SCALE
    g = 1.0 / math.sqrt(1.0 + 3.0 * phi_j ** 2 / math.pi ** 2)
    e = 1.0 / (1.0 + math.exp(-g * (mu - mu_j)))
    v = 1.0 / (g ** 2 * e * (1.0 - e))
    delta = v * g * (score - e)
    a = math.log(vol ** 2)

    def f(x):
        ex = math.exp(x)
        return (ex * (delta ** 2 - phi ** 2 - v - ex) / (2.0 * (phi ** 2 + v + ex) ** 2)
                - (x - a) / tau ** 2)

    big_a = a
    if delta ** 2 > phi ** 2 + v:
        big_b = math.log(delta ** 2 - phi ** 2 - v)
    else:
        k = 1
        while f(a - k * tau) < 0:
            k += 1
        big_b = a - k * tau
    f_a, f_b = f(big_a), f(big_b)
    while abs(big_b - big_a) > EPSILON:
        big_c = big_a + (big_a - big_b) * f_a / (f_b - f_a)
        f_c = f(big_c)
        if f_c * f_b <= 0:
            big_a, f_a = big_b, f_b
        else:
            f_a = f_a / 2.0
        big_b, f_b = big_c, f_c
    new_vol = math.exp(big_a / 2.0)
    phi_star = math.sqrt(phi ** 2 + new_vol ** 2)
    new_phi = 1.0 / math.sqrt(1.0 / phi_star ** 2 + 1.0 / v)
    new_mu = mu + new_phi ** 2 * g * (score - e)
    return 1500.0 + SCALE * new_mu, SCALE * new_phi, new_vol


def glicko_expected(r_a, rd_a, r_b, rd_b):
    phi = math.sqrt(rd_a ** 2 + rd_b ** 2) / SCALE
    g = 1.0 / math.sqrt(1.0 + 3.0 * phi ** 2 / math.pi ** 2)
    return 1.0 / (1.0 + math.exp(-g * (r_a - r_b) / SCALE))


def elo_expected(r_a, r_b):
    return 1.0 / (1.0 + 10.0 ** ((r_b - r_a) / 400.0))


def elo_k(games, rating):
    if games < 30:
        return 40.0
    return 16.0 if rating > 2400.0 else 32.0


def deviance(pairs):
    total = 0.0
    for p, y in pairs:
        pc = min(max(p, 0.01), 0.99)
        total -= y * math.log10(pc) + (1.0 - y) * math.log10(1.0 - pc)
    return total / len(pairs) if pairs else None


def run(games):
    """Both systems over the games; predictions before each game."""
    g2 = {}
    elo = {}
    g2_pairs = []
    elo_pairs = []
    for white, black, y in games:
        a = g2.setdefault(white, (1500.0, 350.0, 0.06))
        b = g2.setdefault(black, (1500.0, 350.0, 0.06))
        g2_pairs.append((glicko_expected(a[0], a[1], b[0], b[1]), y))
        g2[white] = glicko2_update(a[0], a[1], a[2], b[0], b[1], y)
        g2[black] = glicko2_update(b[0], b[1], b[2], a[0], a[1], 1.0 - y)
        ea = elo.setdefault(white, [1500.0, 0])
        eb = elo.setdefault(black, [1500.0, 0])
        elo_pairs.append((elo_expected(ea[0], eb[0]), y))
        na = ea[0] + elo_k(ea[1], ea[0]) * (y - elo_expected(ea[0], eb[0]))
        nb = eb[0] + elo_k(eb[1], eb[0]) * ((1.0 - y) - elo_expected(eb[0], ea[0]))
        elo[white] = [na, ea[1] + 1]
        elo[black] = [nb, eb[1] + 1]
    return {
        "games": len(games),
        "glicko2": {"deviance": deviance(g2_pairs),
                    "ratings": {p: v[0] for p, v in g2.items()}},
        "elo": {"deviance": deviance(elo_pairs),
                "ratings": {p: v[0] for p, v in elo.items()}},
    }


def read_lichess(path):
    """The sample's games in time order (file order among equal times)."""
    rows = []
    with open(path, newline="") as f:
        for line, row in enumerate(csv.DictReader(f)):
            score = {"1-0": 1.0, "0-1": 0.0, "1/2-1/2": 0.5}.get(row["result"])
            if score is None or row["white"] == row["black"]:
                continue
            rows.append((row["utc_date_time"], line, row["white"], row["black"], score))
    rows.sort()
    return [(w, b, s) for _, _, w, b, s in rows]


def read_games(path):
    with open(path) as f:
        return [(w, b, float(s)) for w, b, s in csv.reader(f)]


def generate(n, seed, out):
    """n games between players of known true skill, outcomes drawn from
    the Elo (logistic) model of the true skills; opponents drawn at random
    (a matchmaker pairing on true skill would leave every game near 50/50:
    nothing for a rating to learn from)."""
    rnd = random.Random(seed)
    players = 2000
    skill = {"p%04d" % i: rnd.gauss(1500.0, 300.0) for i in range(players)}
    ids = sorted(skill, key=skill.get)
    games = []
    for _ in range(n):
        i = rnd.randrange(players)
        j = rnd.randrange(players - 1)
        j = j + 1 if j >= i else j
        a, b = ids[i], ids[j]
        y = 1.0 if rnd.random() < elo_expected(skill[a], skill[b]) else 0.0
        games.append((a, b, y))
    with open(out + "/games.csv", "w") as f:
        for a, b, y in games:
            f.write("%s,%s,%s\n" % (a, b, "1" if y == 1.0 else "0"))
    with open(out + "/skills.csv", "w") as f:
        for p in ids:
            f.write("%s,%.6f\n" % (p, skill[p]))
    return {"games": n, "players": players}


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    r = [0.0] * len(values)
    for pos, i in enumerate(order):
        r[i] = float(pos)
    return r


def pearson(x, y):
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    return sxy / math.sqrt(sxx * syy)


def closeness(skills_path, ratings):
    true = {}
    with open(skills_path) as f:
        for p, s in csv.reader(f):
            true[p] = float(s)
    common = sorted(p for p in ratings if p in true)
    x = [true[p] for p in common]
    y = [ratings[p] for p in common]
    return {"players": len(common), "pearson": pearson(x, y), "spearman": pearson(ranks(x), ranks(y)),
            "rmse_after_mean_shift": math.sqrt(sum((a - b - (sum(x) - sum(y)) / len(x)) ** 2
                                                   for a, b in zip(x, y)) / len(x))}


def main(argv):
    if argv[1] == "lichess":
        out = run(read_lichess(argv[2]))
    elif argv[1] == "replay":
        out = run(read_games(argv[2]))
    elif argv[1] == "generate":
        out = generate(int(argv[2]), int(argv[3]), argv[4])
    elif argv[1] == "skills":
        with open(argv[3]) as f:
            out = closeness(argv[2], {p: float(v) for p, v in json.load(f).items()})
    else:
        raise SystemExit(__doc__)
    if argv[1] in ("lichess", "replay") and "--ratings" not in argv:
        for system in ("glicko2", "elo"):
            out[system].pop("ratings")
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv)
