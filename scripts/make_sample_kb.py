"""Build kgqa/data/sample_kb.txt: a few thousand MetaQA triples in which some dev questions of
each hop count stay answerable end to end, plus kgqa/data/sample_qa.tsv listing them.

How: walk each dev question's relation path (its qtype, e.g. ``movie_to_director_to_movie``)
from its topic entity over the full KB, removing the topic entity at each hop as MetaQA does,
and keep the question only if the walk reproduces its gold answers exactly (this drops the
dataset quirks listed in metaqa/README.md). The movies met at the ``movie`` steps of the walk
are the movies the question needs; the sample holds *every* triple of those movies, so each
step of the walk, and the final answers, are the same in the sample as in the full KB (checked
again on the sample). Questions are taken in file order, round-robin over 1-, 2- and 3-hop,
skipping those that need more than ``--max-movies-per-question`` movies (hubs), until the
sample reaches ``--target-triples``. Deterministic: same input, same output.

    python scripts/make_sample_kb.py --metaqa ../shared/metaqa
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

# qtype tokens -> relation names (subjects of every MetaQA triple are movies).
RELATION = {
    "director": "directed_by",
    "writer": "written_by",
    "actor": "starred_actors",
    "genre": "has_genre",
    "year": "release_year",
    "language": "in_language",
    "tags": "has_tags",
    "tag": "has_tags",
    "imdbrating": "has_imdb_rating",
    "imdbvotes": "has_imdb_votes",
}

Triple = tuple[str, str, str]
Adjacency = dict[tuple[str, bool], dict[str, set[str]]]


def read_kb(path: Path) -> list[Triple]:
    triples = []
    for line in path.read_text(encoding="utf-8").splitlines():
        s, r, o = line.split("|")
        triples.append((s, r, o))
    return triples


def adjacency(triples: list[Triple]) -> Adjacency:
    """(relation, forward) -> node -> neighbours; forward goes movie -> value."""
    adj: Adjacency = defaultdict(lambda: defaultdict(set))
    for s, r, o in triples:
        adj[(r, True)][s].add(o)
        adj[(r, False)][o].add(s)
    return adj


def steps(qtype: str) -> list[tuple[str, bool, bool]]:
    """(relation, forward, lands_on_movie) for each hop of a qtype path."""
    tokens = qtype.split("_to_")
    out = []
    for a, b in zip(tokens, tokens[1:], strict=False):
        if a == "movie":
            out.append((RELATION[b], True, b == "movie"))
        else:
            out.append((RELATION[a], False, True))
    return out


def walk(adj: Adjacency, topic: str, qtype: str) -> tuple[set[str], set[str]]:
    """The answers, and the movies visited on the way (topic included if it is a movie)."""
    frontier = {topic}
    movies = {topic} if qtype.startswith("movie_") else set()
    for relation, forward, lands_on_movie in steps(qtype):
        table = adj.get((relation, forward), {})
        frontier = {n for node in frontier for n in table.get(node, ())} - {topic}
        if lands_on_movie:
            movies |= frontier
    return frontier, movies


def read_questions(metaqa: Path, hops: int) -> list[tuple[str, str, list[str], str]]:
    folder = metaqa / f"{hops}-hop"
    qa = folder.joinpath("qa_dev.txt").read_text(encoding="utf-8").splitlines()
    qtypes = folder.joinpath("qa_dev_qtype.txt").read_text(encoding="utf-8").splitlines()
    out = []
    for line, qtype in zip(qa, qtypes, strict=True):
        question, answers = line.split("\t")
        topic = question[question.index("[") + 1 : question.index("]")]
        out.append((question, topic, answers.split("|"), qtype.strip()))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--metaqa", type=Path, default=Path("../shared/metaqa"))
    parser.add_argument("--out", type=Path, default=Path("kgqa/data"))
    parser.add_argument("--target-triples", type=int, default=3000)
    parser.add_argument("--max-movies-per-question", type=int, default=12)
    args = parser.parse_args()

    kb = read_kb(args.metaqa / "kb.txt")
    adj = adjacency(kb)
    questions = {h: read_questions(args.metaqa, h) for h in (1, 2, 3)}
    triples_of: dict[str, list[Triple]] = defaultdict(list)
    for t in kb:
        triples_of[t[0]].append(t)

    chosen: list[tuple[int, str, str, list[str]]] = []
    movies: set[str] = set()
    size = 0
    cursor = {h: 0 for h in questions}
    while size < args.target_triples and any(cursor[h] < len(questions[h]) for h in questions):
        for hops in (1, 2, 3):
            # The next usable question of this hop count, in file order.
            while cursor[hops] < len(questions[hops]):
                question, topic, gold, qtype = questions[hops][cursor[hops]]
                cursor[hops] += 1
                answers, needed = walk(adj, topic, qtype)
                if answers != set(gold) or len(needed) > args.max_movies_per_question:
                    continue
                chosen.append((hops, qtype, question, gold))
                new = needed - movies
                movies |= new
                size += sum(len(triples_of[m]) for m in new)
                break

    sample = [t for t in kb if t[0] in movies]
    # The same walk over the sample must give the same answers.
    sample_adj = adjacency(sample)
    for _hops, qtype, question, gold in chosen:
        topic = question[question.index("[") + 1 : question.index("]")]
        assert walk(sample_adj, topic, qtype)[0] == set(gold), question

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "sample_kb.txt").write_text(
        "".join(f"{s}|{r}|{o}\n" for s, r, o in sample), encoding="utf-8"
    )
    (args.out / "sample_qa.tsv").write_text(
        "hops\tqtype\tquestion\tanswers\n"
        + "".join(f"{h}\t{q}\t{text}\t{'|'.join(g)}\n" for h, q, text, g in chosen),
        encoding="utf-8",
    )
    entities = {s for s, _, _ in sample} | {o for _, _, o in sample}
    by_hop = {h: sum(1 for c in chosen if c[0] == h) for h in (1, 2, 3)}
    print(
        f"{len(sample)} triples, {len(movies)} movies, {len(entities)} entities; "
        f"answerable dev questions by hop: {by_hop}"
    )


if __name__ == "__main__":
    main()
