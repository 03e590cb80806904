"""Load benchmark (not a test): the full MetaQA KB through ``kgqa.graph.load.load_kb`` versus a
row-at-a-time baseline, on the Neo4j that the settings point at. It WIPES that database.
(Formats, streaming and memory: ``bench_load_formats.py``; this one holds the file in memory
to sort and slice it.)

    NEO4J_URI=bolt://127.0.0.1:7687 NEO4J_PASSWORD=... \\
        .venv/bin/python benchmarks/bench_load.py --kb ../shared/metaqa/kb.txt

1. Baseline: an empty database (with the uniqueness constraint, as the real load has), the
   first ``--baseline-rows`` triples, one auto-commit query per triple that MERGEs both
   entities and the relationship (``cypher/merge_triple_single.cypher``).
2. For each ``--batch-sizes`` value: an empty database, then parse + ``load_kb`` of the whole
   file; the fastest run is compared with the baseline per triple.
3. Optionally the same with rows grouped by relation and one ``$type`` per transaction.
4. A reload of the whole file over the loaded graph: it must write nothing.

The counts are checked after each full load (43,234 entities and 133,582 relationships for
MetaQA's kb.txt; pass ``--expect-entities/--expect-relationships`` for another file).
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from kgqa.factory import Factory
from kgqa.graph.load import load_kb
from kgqa.graph.neo4j_store import DuplicateId, Neo4jStore
from kgqa.graph.neo4j_writes import BatchWritten
from kgqa.graph.queries import query
from kgqa.loaders import open_kb
from kgqa.loaders.base import ParsedKB, RawTriple
from kgqa.settings import load_settings


def read_kb(kb: Path, fmt: str | None) -> ParsedKB:
    """The whole file in memory (this benchmark sorts and slices it)."""
    opened = open_kb(kb, fmt)
    problems = list(opened.check())
    return ParsedKB(str(kb), list(opened.stream()), problems, opened.stats.lines_read)


class GroupedStore:
    """The store, writing each batch's triples as one transaction per relation with
    ``$type`` (after its entities)."""

    def __init__(self, store: Neo4jStore):
        self.store = store

    def ensure_schema(self) -> None:
        self.store.ensure_schema()

    def entity_count(self) -> int:
        return self.store.entity_count()

    def needs_planner_warmup(self) -> bool:
        return self.store.needs_planner_warmup()

    def write_batch(
        self,
        triples: Sequence[RawTriple],
        known: Mapping[str, str | None] | None = None,
        check_names: bool = True,
    ) -> BatchWritten:
        names = list(dict.fromkeys(x for t in triples for x in (t.subject, t.object)))
        entities = self.store.merge_entities(names)
        return BatchWritten(entities, self.store.merge_triples(triples, group_by_type=True))

    def duplicate_triple_ids(self, limit: int = 20) -> list[DuplicateId]:
        return self.store.duplicate_triple_ids(limit)

    def refresh_statistics(self) -> None:
        self.store.refresh_statistics()


def baseline(factory: Factory, store: Neo4jStore, triples: list[RawTriple]) -> float:
    """Seconds to MERGE ``triples`` one auto-commit query at a time into an empty graph."""
    store.clear()
    store.ensure_schema()
    text = query("merge_triple_single")
    database = factory.settings.neo4j.database
    started = time.perf_counter()
    with factory.driver().session(database=database) as session:
        for i, t in enumerate(triples):
            session.run(text, s=t.subject, o=t.object, r=t.relation, id=t.id).consume()
            if i == 100:
                # Fair to the baseline: a plan cached on the empty graph scans every
                # relationship per row; the batched load avoids that by re-planning
                # (see cypher/merge_triples.cypher), the baseline by planning once more here.
                session.run("CALL db.clearQueryCaches()").consume()
    return time.perf_counter() - started


def full_load(
    store: Neo4jStore, kb: Path, fmt: str | None, batch_size: int, grouped: bool = False
) -> tuple[float, float, int, ParsedKB]:
    """(parse seconds, write seconds, triples written) for a load into an empty graph."""
    store.clear()
    started = time.perf_counter()
    parsed = read_kb(kb, fmt)
    parsed_at = time.perf_counter()
    if grouped:
        parsed.triples.sort(key=lambda t: t.relation)
    writer = GroupedStore(store) if grouped else store
    report = load_kb(writer, parsed, batch_size=batch_size)
    return parsed_at - started, time.perf_counter() - parsed_at, report.triples_written, parsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kb", type=Path, default=Path("../shared/metaqa/kb.txt"))
    parser.add_argument("--format", default=None, help="default: from the extension")
    parser.add_argument("--baseline-rows", type=int, default=5000)
    parser.add_argument("--batch-sizes", default="5000,10000,20000")
    parser.add_argument("--grouped", action="store_true", help="also time one $type per batch")
    parser.add_argument("--expect-entities", type=int, default=43_234)
    parser.add_argument("--expect-relationships", type=int, default=133_582)
    args = parser.parse_args()

    def check(store: Neo4jStore, label: str) -> None:
        stats = store.stats()
        ok = (stats.entities, stats.relationships, stats.triple_ids) == (
            args.expect_entities,
            args.expect_relationships,
            args.expect_relationships,
        )
        print(
            f"  {label}: {stats.entities:,} entities, {stats.relationships:,} relationships, "
            f"{stats.triple_ids:,} triple ids -> {'OK' if ok else 'MISMATCH'}"
        )
        if not ok:
            sys.exit(1)

    settings = load_settings()
    with Factory(settings) as factory:
        store = factory.graph()
        version = factory.driver().execute_query(
            "CALL dbms.components() YIELD versions RETURN versions[0] AS v"
        )[0][0]["v"]
        print(
            f"Neo4j {version} at {settings.neo4j.effective_uri}; Python {platform.python_version()}"
        )

        rows = read_kb(args.kb, args.format).triples[: args.baseline_rows]
        seconds = baseline(factory, store, rows)
        base_rate = len(rows) / seconds
        print(
            f"baseline, one MERGE query per triple: {len(rows):,} triples in {seconds:.1f} s "
            f"= {base_rate:,.0f} triples/s"
        )

        runs: list[tuple[str, float, float]] = []
        variants = [(int(b), False) for b in args.batch_sizes.split(",")]
        if args.grouped:
            variants += [(int(b), True) for b in args.batch_sizes.split(",")]
        for batch_size, grouped in variants:
            label = f"batch {batch_size:,}{', one $type per tx' if grouped else ''}"
            parse_s, write_s, written, parsed = full_load(
                store, args.kb, args.format, batch_size, grouped
            )
            total = parse_s + write_s
            rate = len(parsed.triples) / total
            runs.append((label, total, rate))
            print(
                f"full load, {label}: {written:,} triples in {total:.1f} s (parse {parse_s:.1f} s, "
                f"write {write_s:.1f} s) = {rate:,.0f} triples/s, "
                f"{rate / base_rate:.0f}x the baseline per triple"
            )
            check(store, "after load")

        started = time.perf_counter()
        parsed = read_kb(args.kb, args.format)
        report = load_kb(store, parsed)
        print(
            f"reload over the loaded graph: {report.triples_written} triples and "
            f"{report.entities_written} entities written in {time.perf_counter() - started:.1f} s"
        )
        check(store, "after reload")
        best = min(runs, key=lambda r: r[1])
        print(
            f"best: {best[0]}: {best[1]:.1f} s, {best[2]:,.0f} triples/s, "
            f"{best[2] / base_rate:.0f}x the baseline per triple"
        )


if __name__ == "__main__":
    main()
