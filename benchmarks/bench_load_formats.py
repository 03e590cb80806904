"""Load benchmark by format (not a test): a generated N-Triples file of ``--triples``
relationships (1,000,000 by default) beside the MetaQA KB, loaded the way ``kgqa load
--no-index`` does (check pass, then streamed batched writes), each into an empty graph, in
the same run. It WIPES the database the settings point at.

    .venv/bin/python benchmarks/bench_load_formats.py --dir /tmp/kgqa-bench \\
        --metaqa ../shared/metaqa/kb.txt > /tmp/kgqa-bench/formats.log 2>&1 &

The N-Triples file is generated into ``--dir`` (never the repository), deterministically,
once: ``--triples`` relation triples over 200,000 entity IRIs and 20 predicates (three of
them with year literals), all different, plus an ``rdfs:label`` for every fourth entity;
about 0.4% of the labels are shared by two IRIs, so those entities get disambiguated
names. Expected counts are computed while generating and checked after the load.

Each load runs in its own process, so that its peak RSS is its own; the child also samples
its RSS at each tenth of the write pass (flat memory shows as a flat row). Printed per
format: lines, triples, seconds for the check pass and the write pass, triples/s over both,
peak RSS; then the ratio of the two rates. ``--reload`` also loads each file a second time
over the loaded graph (must write nothing).
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

ENTITIES = 200_000
PREDICATES = 20
LITERAL_PREDICATES = 3  # p0..p2 have year literals as objects
YEARS = 120
EX = "http://example.org/"


def generate(path: Path, triples: int) -> dict[str, int]:
    """Write the N-Triples file; return the expected counts of the graph it makes."""
    if triples > ENTITIES * 5:
        raise SystemExit("--triples must be at most 1,000,000 (all triples different)")
    entities: set[int] = set()
    years: set[int] = set()
    labels = 0
    tmp = path.with_suffix(".part")
    with tmp.open("w", encoding="utf-8") as f:
        for i in range(triples):
            s = i % ENTITIES
            k = i // ENTITIES
            # (s, p) is different for every i while triples <= ENTITIES * 5, so every
            # triple is different (k < 5 and 7k mod 20 takes 5 different values).
            p = (7 * k + s) % PREDICATES
            entities.add(s)
            if p < LITERAL_PREDICATES:
                year = 1900 + (s * 31 + k) % YEARS
                years.add(year)
                obj = f'"{year}"^^<http://www.w3.org/2001/XMLSchema#gYear>'
            else:
                o = (s * 7919 + k * 104_729 + 1) % ENTITIES
                entities.add(o)
                obj = f"<{EX}entity/e{o}>"
            f.write(f"<{EX}entity/e{s}> <{EX}prop/p{p}> {obj} .\n")
            if k == 0 and s % 4 == 0:
                # Every 1000th labelled entity shares its label with another one.
                name = f"Entity {s // 10}" if s % 1000 == 0 else f"Entity {s}"
                f.write(
                    f'<{EX}entity/e{s}> <http://www.w3.org/2000/01/rdf-schema#label> "{name}"@en .\n'
                )
                labels += 1
    tmp.rename(path)
    return {"relationships": triples, "entities": len(entities) + len(years), "labels": labels}


def child(kb: Path, fmt: str | None, batch_size: int, reload: bool, overlap: bool) -> None:
    """Load ``kb`` into an empty graph; print one JSON line of figures."""
    from kgqa.factory import Factory
    from kgqa.graph.load import check_kb, load_kb
    from kgqa.loaders import open_kb
    from kgqa.settings import load_settings

    samples: list[int] = []
    settings = load_settings()
    with Factory(settings) as factory:
        store = factory.graph()
        store.clear()
        opened = open_kb(kb, fmt)
        neo4j_pid = _server_pid(settings)
        neo4j_cpu = _cpu_seconds(neo4j_pid)
        own_cpu = _own_cpu_seconds()
        started = time.perf_counter()
        checked = check_kb(opened)
        check_s = time.perf_counter() - started
        tenth = max(1, checked.triples // 10)
        done = [0]

        def progress(n: int) -> None:
            before = done[0] // tenth
            done[0] += n
            if done[0] // tenth > before:
                samples.append(_rss_mb())

        report = load_kb(
            store,
            opened,
            batch_size=batch_size,
            checked=checked,
            progress=progress,
            overlap=overlap,
        )
        total_s = time.perf_counter() - started
        own_cpu = _own_cpu_seconds() - own_cpu
        neo4j_cpu = _cpu_seconds(neo4j_pid) - neo4j_cpu
        stats = store.stats()
        out = {
            "lines": checked.lines_read,
            "triples": checked.triples,
            "written": report.triples_written,
            "entities_written": report.entities_written,
            "check_s": check_s,
            "write_s": total_s - check_s,
            "total_s": total_s,
            "python_cpu_s": own_cpu,
            "neo4j_cpu_s": neo4j_cpu if neo4j_pid else None,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "rss_by_tenth_mb": samples,
            "entities": stats.entities,
            "relationships": stats.relationships,
            "triple_ids": stats.triple_ids,
        }
        if reload:
            again = time.perf_counter()
            second = load_kb(store, open_kb(kb, fmt), batch_size=batch_size)
            out["reload_s"] = time.perf_counter() - again
            out["reload_written"] = second.triples_written + second.entities_written
    print(json.dumps(out))


def _server_pid(settings: object) -> int | None:
    """The pid of the local Neo4j that `kgqa neo4j start` manages (None for NEO4J_URI)."""
    from kgqa.graph.server import LocalNeo4j

    if not settings.neo4j.managed:  # type: ignore[attr-defined]
        return None
    return LocalNeo4j(settings).pid()  # type: ignore[arg-type]


def _cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds of a process so far (0 when unknown)."""
    if pid is None:
        return 0.0
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _rss_mb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    return 0


def _load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def run_child(kb: Path, fmt: str | None, args: argparse.Namespace) -> dict[str, object]:
    cmd = [sys.executable, __file__, "--child", str(kb), "--batch-size", str(args.batch_size)]
    cmd += ["--format", fmt] if fmt else []
    cmd += ["--reload"] if args.reload else []
    cmd += ["--no-overlap"] if args.no_overlap else []
    loads: list[str] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(5):
            loads.append(_load_average().split()[0])

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    stop.set()
    if done.returncode != 0:
        print(done.stdout, done.stderr, file=sys.stderr)
        raise SystemExit(f"load of {kb} failed (exit {done.returncode})")
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    result["load_average_samples"] = loads
    return result


def show(label: str, r: dict[str, object]) -> float:
    triples = int(r["triples"])  # type: ignore[call-overload]
    total = float(r["total_s"])  # type: ignore[arg-type]
    rate = int(r["relationships"]) / total  # type: ignore[call-overload]
    loads = [float(x) for x in r["load_average_samples"]]  # type: ignore[attr-defined]
    load = f"{min(loads):.1f}-{max(loads):.1f}" if loads else _load_average().split()[0]
    print(
        f"{label}: {int(r['lines']):,} lines, {triples:,} triples -> "  # type: ignore[call-overload]
        f"{int(r['relationships']):,} relationships, {int(r['entities']):,} entities; "  # type: ignore[call-overload]
        f"check {float(r['check_s']):.1f} s + write {float(r['write_s']):.1f} s = "  # type: ignore[arg-type]
        f"{total:.1f} s = {rate:,.0f} triples/s; peak RSS {float(r['peak_rss_mb']):.0f} MB; "  # type: ignore[arg-type]
        f"load average {load}"
    )
    print(f"  RSS at each tenth of the write pass (MB): {r['rss_by_tenth_mb']}")
    python_cpu, neo4j_cpu = float(r["python_cpu_s"]), r["neo4j_cpu_s"]  # type: ignore[arg-type]
    if neo4j_cpu is not None:
        busy = python_cpu + float(neo4j_cpu)  # type: ignore[arg-type]
        print(
            f"  CPU: kgqa {python_cpu:.1f} s + Neo4j {float(neo4j_cpu):.1f} s = {busy:.1f} s "  # type: ignore[arg-type]
            f"({int(r['relationships']) / busy:,.0f} triples per CPU-second; "  # type: ignore[call-overload]
            f"{busy / total:.2f} of the 2 cores on average)"
        )
    if "reload_s" in r:
        print(f"  reload: {r['reload_written']} written in {float(r['reload_s']):.1f} s")  # type: ignore[arg-type]
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=Path("/tmp/kgqa-bench"))
    parser.add_argument("--metaqa", type=Path, default=Path("../shared/metaqa/kb.txt"))
    parser.add_argument("--triples", type=int, default=1_000_000)
    parser.add_argument("--batch-size", type=int, default=10_000)
    parser.add_argument("--reload", action="store_true")
    parser.add_argument("--no-overlap", action="store_true", help="parse and write in turn")
    parser.add_argument("--skip-metaqa", action="store_true")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--format", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.format, args.batch_size, args.reload, not args.no_overlap)
        return

    args.dir.mkdir(parents=True, exist_ok=True)
    nt = args.dir / f"generated-{args.triples}.nt"
    expected_file = nt.with_suffix(".expected.json")
    if not nt.exists() or not expected_file.exists():
        started = time.perf_counter()
        expected = generate(nt, args.triples)
        expected_file.write_text(json.dumps(expected))
        print(f"generated {nt} in {time.perf_counter() - started:.1f} s: {expected}")
    expected = json.loads(expected_file.read_text())

    from kgqa import __version__

    print(
        f"kgqa {__version__}, Python {platform.python_version()}, {platform.machine()}, "
        f"batch {args.batch_size:,}, overlap {'off' if args.no_overlap else 'on'}; "
        f"load average at start {_load_average()}"
    )
    rates = {}
    if not args.skip_metaqa:
        r = run_child(args.metaqa, None, args)
        rates["metaqa"] = show(f"metaqa {args.metaqa}", r)
    r = run_child(nt, "nt", args)
    rates["nt"] = show(f"nt {nt}", r)
    ok = (r["relationships"], r["triple_ids"], r["entities"]) == (
        expected["relationships"],
        expected["relationships"],
        expected["entities"],
    )
    print(f"  counts {'OK' if ok else 'MISMATCH'} (expected {expected})")
    if "metaqa" in rates:
        print(f"ratio nt / metaqa triples/s: {rates['nt'] / rates['metaqa']:.2f}")
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
