"""The MetaQA reader, triple ids and the load flow (with a fake store: no Neo4j)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from kgqa.errors import GraphUnavailable, KBFormatError
from kgqa.graph.load import LoadReport, check_kb, describe_problems, load_kb
from kgqa.graph.neo4j_store import DuplicateId
from kgqa.graph.neo4j_writes import BatchWritten
from kgqa.loaders import formats, get, open_kb
from kgqa.loaders import metaqa as metaqa_module
from kgqa.loaders.base import RawTriple, triple_id
from kgqa.loaders.metaqa import parse_lines, read

pytestmark = pytest.mark.unit


def lines(text: bytes) -> list[bytes]:
    return text.splitlines(keepends=True)


# -- triple ids ----------------------------------------------------------------------------
def test_triple_id_is_stable_across_machines_and_runs() -> None:
    # A fixed value: the id is part of the data (FAISS keys, Neo4j property), so a change
    # to its derivation must be deliberate.
    assert triple_id("Kismet", "directed_by", "William Dieterle") == 536408331689663463


def test_triple_id_fits_signed_64_bit_and_separates_fields() -> None:
    ids = {triple_id("a|b", "c", "d"), triple_id("a", "b|c", "d"), triple_id("a", "b", "c|d")}
    assert len(ids) == 3
    assert all(0 <= i < 2**63 for i in ids)
    assert triple_id("a", "r", "b") != triple_id("b", "r", "a")


# -- parsing -------------------------------------------------------------------------------
def test_parses_valid_lines_in_order() -> None:
    kb = parse_lines(lines(b"Kismet|directed_by|William Dieterle\nKismet|release_year|1944\n"))
    assert [(t.subject, t.relation, t.object, t.line) for t in kb.triples] == [
        ("Kismet", "directed_by", "William Dieterle", 1),
        ("Kismet", "release_year", "1944", 2),
    ]
    assert kb.triples[0].id == triple_id("Kismet", "directed_by", "William Dieterle")
    assert kb.problems == []
    assert kb.lines_read == 2
    assert kb.entities == ["Kismet", "William Dieterle", "1944"]
    assert kb.relations == ["directed_by", "release_year"]


def test_tolerates_bom_crlf_blank_lines_and_counts_duplicates() -> None:
    data = b"\xef\xbb\xbfa|r|b\r\n\r\n   \na|r|b\r\nc|r|d"
    kb = parse_lines(lines(data))
    assert [(t.subject, t.relation, t.object) for t in kb.triples] == [
        ("a", "r", "b"),
        ("c", "r", "d"),
    ]
    assert kb.blank_lines == 2
    assert kb.duplicates == 1
    assert kb.lines_read == 5
    assert kb.problems == []


def test_reports_each_bad_line_with_number_and_reason() -> None:
    data = b"ok|r|fine\nonly two|fields\na|b|c|d\n|r|o\ns||\nbad \xff byte|r|o\n"
    kb = parse_lines(lines(data))
    assert [t.subject for t in kb.triples] == ["ok"]
    numbers = [n for n, _ in kb.problems]
    reasons = dict(kb.problems)
    assert numbers == [2, 3, 4, 5, 6]
    assert "found 2" in reasons[2]
    assert "found 4" in reasons[3]
    assert reasons[4] == "empty subject"
    assert reasons[5] == "empty relation and object"
    assert "UTF-8" in reasons[6]


def test_a_bom_after_the_first_line_is_not_silently_dropped() -> None:
    kb = parse_lines(lines(b"a|r|b\n\xef\xbb\xbfc|r|d\n"))
    # Kept as part of the name rather than guessed away: the text is valid UTF-8.
    assert kb.triples[1].subject == "\ufeffc"


def test_id_collision_within_a_file_is_a_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metaqa_module, "triple_id", lambda s, r, o: 42)
    kb = parse_lines(lines(b"a|r|b\nc|r|d\na|r|b\n"))
    assert [t.subject for t in kb.triples] == ["a"]
    assert kb.problems == [(2, "triple id 42 collides with line 1")]
    assert kb.duplicates == 1


def test_relation_names_are_kept_verbatim() -> None:
    kb = parse_lines(lines(b"a|x`]->(n) DETACH DELETE n //|b\n"))
    assert kb.triples[0].relation == "x`]->(n) DETACH DELETE n //"


def test_missing_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(KBFormatError) as info:
        read(tmp_path / "nope.txt")
    assert str(info.value) == f"KB file {tmp_path / 'nope.txt'} does not exist"


def test_registry_knows_metaqa_and_rejects_unknown_formats() -> None:
    from kgqa.errors import ConfigError

    assert "metaqa" in formats()
    assert get("metaqa").opener is metaqa_module.open_metaqa
    with pytest.raises(ConfigError, match="known: .*metaqa"):
        get("nope")


# -- streaming the same file -----------------------------------------------------------------
def test_the_streamed_reader_checks_then_streams_the_same_lines(tmp_path: Path) -> None:
    kb = tmp_path / "kb.txt"
    kb.write_bytes(b"\xef\xbb\xbfa|r|b\r\nbroken\r\n\r\na|r|b\r\nc|r|\x00d\r\ne|r|f")
    opened = open_kb(kb)
    assert isinstance(opened, metaqa_module.MetaQAFile)
    assert list(opened.check()) == [
        (2, "expected 3 fields separated by '|', found 1"),
        (5, "object contains the control character U+0000 (character 1)"),
    ]
    assert (opened.stats.lines_read, opened.stats.triples, opened.stats.blank_lines) == (6, 3, 1)
    # Repeats are not dropped while streaming (that would cost memory per triple): MERGE
    # writes a repeat once.
    assert [(t.subject, t.line) for t in opened.stream()] == [("a", 1), ("a", 4), ("e", 6)]
    assert opened.stats.triples == 3  # the check pass's counts stay


def test_an_oversized_name_is_a_problem_of_its_line() -> None:
    kb = parse_lines(lines(b"a|r|b\nc|r|" + b"x" * 200_000 + b"\n"))
    assert [t.subject for t in kb.triples] == ["a"]
    ((number, reason),) = kb.problems
    assert number == 2
    assert reason == (
        "object is too long for Neo4j to index: 200,000 characters (200,000 bytes in UTF-8; "
        "the limit is 4,000)"
    )
    # Counted in UTF-8 bytes, as Neo4j does: 1,500 three-byte characters are too many.
    (_, reason) = parse_lines(lines("\u20ac".encode() * 1_500 + b"|r|b\n")).problems[0]
    assert "1,500 characters (4,500 bytes" in reason


def test_values_neo4j_would_refuse_are_problems() -> None:
    data = b"a\x00b|r|c\na|r\x1fs|c\na|" + b"r" * 1001 + b"|c\nfine|r|c\n"
    kb = parse_lines(lines(data))
    assert [t.subject for t in kb.triples] == ["fine"]
    reasons = dict(kb.problems)
    assert reasons[1] == "subject contains the control character U+0000 (character 2)"
    assert reasons[2] == "relation contains the control character U+001F (character 2)"
    assert reasons[3].startswith("relation is too long for Neo4j to index: 1,001 characters")


# -- registry ----------------------------------------------------------------------------------
def test_formats_are_chosen_by_name_or_extension(tmp_path: Path) -> None:
    from kgqa.loaders import format_for

    assert formats() == ["csv", "jsonl", "metaqa", "nt", "tsv", "ttl"]
    for ext, name in [(".txt", "metaqa"), (".csv", "csv"), (".TSV", "tsv"), (".jsonl", "jsonl")]:
        assert format_for(Path("kb" + ext)).name == name
    assert format_for(Path("kb.nt")).name == "nt" and format_for(Path("kb.ttl")).name == "ttl"
    assert format_for(Path("kb.nt"), "metaqa").name == "metaqa"


def test_unknown_format_or_extension_is_one_line_naming_the_known_ones() -> None:
    from kgqa.errors import ConfigError
    from kgqa.loaders import format_for

    known = "known: csv (.csv), jsonl (.jsonl), metaqa (.txt), nt (.nt), tsv (.tsv), ttl (.ttl)"
    with pytest.raises(ConfigError) as info:
        get("owl")
    assert str(info.value) == f"unknown KB format 'owl'; {known}"
    with pytest.raises(ConfigError) as info:
        format_for(Path("kb.xml"))
    assert str(info.value) == (
        f"cannot tell the KB format of kb.xml (extension '.xml'); pass --format, {known}"
    )
    with pytest.raises(ConfigError, match=r"\(no extension\)"):
        format_for(Path("kb"))


def test_options_a_format_does_not_take_are_refused(tmp_path: Path) -> None:
    from kgqa.errors import ConfigError
    from kgqa.loaders import ReadOptions

    kb = tmp_path / "kb.txt"
    kb.write_bytes(b"a|r|b\n")
    with pytest.raises(ConfigError) as info:
        open_kb(kb, options=ReadOptions(columns=("0", "1", "2")))
    assert str(info.value) == (
        "--columns does not apply to the metaqa format (only to csv, jsonl, tsv)"
    )
    with pytest.raises(KBFormatError, match="is a folder"):
        open_kb(tmp_path, "metaqa")


# -- load flow -----------------------------------------------------------------------------
class FakeStore:
    """Records writes and behaves like MERGE: writing a name or id twice creates nothing.
    ``fail_at``: the batch (1-based) whose write raises ``GraphUnavailable``."""

    def __init__(
        self,
        duplicates: list[DuplicateId] | None = None,
        warmup: bool = False,
        fail_at: int | None = None,
    ):
        self.calls: list[str] = []
        self.names: set[str] = set()
        self.ids: set[int] = set()
        self.batch_sizes: list[int] = []
        self.entity_rows = 0
        self._duplicates = duplicates or []
        self._warmup = warmup
        self._fail_at = fail_at
        self.names_before: set[str] = set()

    def ensure_schema(self) -> None:
        self.calls.append("schema")
        self.names_before = set(self.names)

    def entity_count(self) -> int:
        return len(self.names)

    def needs_planner_warmup(self) -> bool:
        return self._warmup

    def write_batch(
        self,
        triples: Sequence[RawTriple],
        known: Mapping[str, str | None] | None = None,
        check_names: bool = True,
    ) -> BatchWritten:
        assert check_names == bool(self.names_before)
        if self._fail_at is not None and len(self.batch_sizes) + 1 == self._fail_at:
            raise GraphUnavailable("lost the connection to Neo4j (merge_triples); is it running?")
        self.calls.append("batch")
        self.batch_sizes.append(len(triples))
        names = {x for t in triples for x in (t.subject, t.object)} - set(known or {})
        self.entity_rows += len(names)
        new_names = names - self.names
        self.names |= new_names
        assert all(t.subject in self.names and t.object in self.names for t in triples)
        new = {t.id for t in triples} - self.ids
        self.ids |= new
        return BatchWritten(len(new_names), len(new))

    def duplicate_triple_ids(self, limit: int = 20) -> list[DuplicateId]:
        self.calls.append("check")
        return self._duplicates[:limit]

    def refresh_statistics(self) -> None:
        self.calls.append("statistics")


def kb_text(n: int) -> bytes:
    return b"".join(f"movie {i}|directed_by|person {i % 3}\n".encode() for i in range(n))


def test_load_writes_schema_then_batches_of_entities_and_triples() -> None:
    parsed = parse_lines(lines(kb_text(10)), "kb.txt")
    store = FakeStore()
    progressed: list[int] = []
    report = load_kb(store, parsed, batch_size=4, progress=progressed.append)
    assert store.calls == ["schema"] + ["batch"] * 3 + ["statistics", "check"]
    assert store.batch_sizes == [4, 4, 2]
    assert progressed == [4, 4, 2]
    assert report.triples_written == 10
    assert report.entities_written == 13
    assert report.triples_in_file == 10
    assert report.lines_read == 10
    assert report.rejected == 0


def test_into_a_graph_with_entities_later_batches_know_the_entities_written() -> None:
    store = FakeStore()
    store.names = {"someone"}
    load_kb(store, parse_lines(lines(kb_text(10)), "kb.txt"), batch_size=4)
    # The directors are in every batch but sent once: later batches know them.
    assert store.entity_rows == 13


def test_the_first_batch_into_an_empty_graph_is_small() -> None:
    store = FakeStore(warmup=True)
    load_kb(store, parse_lines(lines(kb_text(350))), batch_size=200)
    assert store.batch_sizes == [10, 200, 140]


@pytest.mark.parametrize("overlap", [True, False])
def test_streamed_file_loads_the_same_as_in_memory(tmp_path: Path, overlap: bool) -> None:
    kb = tmp_path / "kb.txt"
    kb.write_bytes(kb_text(25) + b"movie 1|directed_by|person 1\n")
    streamed, in_memory = FakeStore(), FakeStore()
    report = load_kb(streamed, open_kb(kb), batch_size=7, overlap=overlap)
    load_kb(in_memory, metaqa_module.read(kb), batch_size=7)
    assert streamed.ids == in_memory.ids and streamed.names == in_memory.names
    # The repeated last line is one of the file's triples, written as nothing new.
    assert (report.triples_in_file, report.triples_written) == (26, 25)
    assert "26 triples (25 written, 1 already in the graph or repeated)" in report.summary()


def test_second_load_writes_nothing_new() -> None:
    parsed = parse_lines(lines(kb_text(10)), "kb.txt")
    store = FakeStore()
    load_kb(store, parsed)
    again = load_kb(store, parsed)
    assert (again.triples_written, again.entities_written) == (0, 0)
    assert "0 written, 10 already in the graph or repeated" in again.summary()
    assert store.calls[-4:] == ["schema", "batch", "statistics", "check"]


def test_bad_lines_fail_before_anything_is_written() -> None:
    parsed = parse_lines(lines(b"a|r|b\nbroken\nc|r|\n"), "kb.txt")
    store = FakeStore()
    with pytest.raises(KBFormatError) as info:
        load_kb(store, parsed)
    assert store.calls == []
    message = str(info.value)
    assert "kb.txt: 2 bad lines, nothing was written" in message
    assert "line 2: expected 3 fields separated by '|', found 1" in message
    assert "line 3: empty object" in message
    assert info.value.problems == parsed.problems


def test_skip_loads_valid_lines_and_reports_the_rest() -> None:
    parsed = parse_lines(lines(b"a|r|b\nbroken\nc|r|d\n\n"), "kb.txt")
    store = FakeStore()
    report = load_kb(store, parsed, on_error="skip")
    assert store.ids == {triple_id("a", "r", "b"), triple_id("c", "r", "d")}
    assert report.rejected == 1
    assert report.blank == 1
    assert report.problems == ((2, "expected 3 fields separated by '|', found 1"),)
    assert "1 line rejected" in report.summary()


def test_a_check_keeps_the_first_thousand_problems_and_counts_all(tmp_path: Path) -> None:
    kb = tmp_path / "kb.txt"
    kb.write_bytes(b"bad\n" * 2_500 + b"a|r|b\n")
    found = check_kb(open_kb(kb), on_error="skip")
    assert found.problem_count == 2_500 and len(found.problems) == 1_000
    with pytest.raises(KBFormatError) as info:
        check_kb(open_kb(kb))
    assert "2,500 bad lines, nothing was written" in str(info.value)
    assert str(info.value).endswith("... and 2,480 more")


def test_empty_file_is_an_error() -> None:
    with pytest.raises(KBFormatError, match="no triples to load"):
        check_kb(parse_lines(lines(b"\n\n"), "empty.txt"))
    with pytest.raises(KBFormatError, match=r"no triples to load \(1 bad lines\)"):
        check_kb(parse_lines(lines(b"bad\n"), "bad.txt"), on_error="skip")


def test_problem_listing_stops_at_twenty_then_counts() -> None:
    problems = [(n, "empty subject") for n in range(1, 26)]
    text = describe_problems(problems)
    assert text.count("empty subject") == 20
    assert "line 20:" in text and "line 21:" not in text
    assert text.endswith("... and 5 more")
    assert describe_problems(problems[:3], total=1_003).endswith("... and 1,000 more")


def test_a_collision_found_in_the_graph_after_loading_raises() -> None:
    parsed = parse_lines(lines(kb_text(3)), "kb.txt")
    clash = DuplicateId(7, 2, (("a", "r", "b"), ("c", "s", "d")))
    with pytest.raises(
        KBFormatError, match=r"id 7 on 2 relationships, e.g. \(a, r, b\); \(c, s, d\)"
    ):
        load_kb(FakeStore(duplicates=[clash]), parsed)


@pytest.mark.parametrize("overlap", [True, False])
def test_a_load_that_stops_mid_write_says_what_it_left(overlap: bool) -> None:
    parsed = parse_lines(lines(kb_text(10)), "kb.txt")
    store = FakeStore(fail_at=3)
    with pytest.raises(GraphUnavailable) as info:
        load_kb(store, parsed, batch_size=4, overlap=overlap)
    assert store.batch_sizes == [4, 4]
    assert str(info.value) == (
        "kb.txt: the load stopped at line 9: lost the connection to Neo4j (merge_triples); "
        "is it running?; written before it: 8 new triples and 11 new entities, the triples "
        "of the file's lines up to line 8 (of 10 triples); the failed batch was rolled back. "
        "Run the same `kgqa load` again to complete it (writes are idempotent)"
    )
    store._fail_at = None  # Neo4j is back
    again = load_kb(store, parsed, batch_size=4)
    assert (again.triples_written, len(store.ids)) == (2, 10)


def test_invalid_arguments_are_rejected() -> None:
    parsed = parse_lines(lines(kb_text(1)))
    with pytest.raises(ValueError):
        load_kb(FakeStore(), parsed, batch_size=0)
    with pytest.raises(ValueError):
        load_kb(FakeStore(), parsed, on_error="ignore")  # type: ignore[arg-type]


def test_report_summary_names_every_figure() -> None:
    report = LoadReport("kb.txt", 12, 9, 5, 7, 1, 0, 1.25)
    assert report.summary() == (
        "kb.txt: 12 lines read, 9 triples (7 written, 2 already in the graph or repeated), "
        "5 new entities, 1 line rejected, 0 blank, 1.2 s"
    )
    rdf = LoadReport("kb.nt", 5, 1, 1, 1, 0, 0, 0.5, labels=2, left_out=(("blank node", 2),))
    assert rdf.summary() == (
        "kb.nt: 5 lines read, 1 triple (1 written, 0 already in the graph or repeated), "
        "1 new entity, 2 labels, 2 triples with a blank node left out, 0 lines rejected, "
        "0 blank, 0.5 s"
    )


# -- CLI (no server needed: these fail before connecting) ------------------------------------
def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from kgqa.cli import main

    with pytest.raises(SystemExit) as info:
        main(argv)
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def test_cli_bad_file_lists_lines_and_exits_nonzero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A server address where nothing listens: the command must fail before connecting.
    monkeypatch.setenv("NEO4J_URI", "bolt://127.0.0.1:9")
    kb = tmp_path / "kb.txt"
    kb.write_bytes(b"a|r|b\nnot a triple\n")
    code, out, err = run_cli(["load", str(kb)], capsys)
    assert code == KBFormatError.exit_code
    assert "line 2: expected 3 fields" in err
    assert "Traceback" not in err and out == ""


def test_cli_missing_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEO4J_URI", "bolt://127.0.0.1:9")
    code, _, err = run_cli(["load", str(tmp_path / "missing.txt")], capsys)
    assert code == KBFormatError.exit_code
    assert err.strip().splitlines() == [
        f"kgqa: error: KB file {tmp_path / 'missing.txt'} does not exist"
    ]


def test_cli_unreachable_server_names_the_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEO4J_URI", "bolt://127.0.0.1:9")
    monkeypatch.setenv("NEO4J_PASSWORD", "x")
    kb = tmp_path / "kb.txt"
    kb.write_bytes(b"a|r|b\n")
    code, _, err = run_cli(["load", str(kb)], capsys)
    assert code == 4
    assert len(err.strip().splitlines()) == 1
    assert "NEO4J_URI" in err


def test_one_bad_line_is_one_line() -> None:
    with pytest.raises(KBFormatError) as info:
        check_kb(parse_lines(lines(b"a|r|b\nbad\n"), "kb.txt"))
    assert str(info.value) == (
        "kb.txt: line 2: expected 3 fields separated by '|', found 1; nothing was written "
        "(fix the line, or use --on-error skip to load the valid lines)"
    )


BAD_INPUTS = {
    "unknown format": ("kb.txt", b"a|r|b\n", ["--format", "owl"], "unknown KB format 'owl'"),
    "unknown extension": ("kb.xml", b"<a/>\n", [], "cannot tell the KB format of"),
    "csv column count": ("kb.csv", b"a,r,b\nc,r\n", [], "line 2: expected 3 fields"),
    "jsonl bad json": ("kb.jsonl", b'{"subject": "a",\n', [], "line 1: not valid JSON"),
    "malformed nt": ("kb.nt", b"<http://e/a> <http://e/r> oops .\n", [], "line 1: not valid RDF"),
    "turtle syntax": ("kb.ttl", b"<http://e/a> <http://e/r> .\n", ["--on-error", "skip"], "line 1"),
    "oversized name": ("kb.txt", b"a|r|" + b"x" * 200_000 + b"\n", [], "too long for Neo4j"),
    "option for another format": ("kb.nt", b"", ["--columns", "0,1,2"], "does not apply"),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_cli_bad_input_is_one_line_and_exits_nonzero(
    case: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Nothing listens there: every one of these fails before connecting.
    monkeypatch.setenv("NEO4J_URI", "bolt://127.0.0.1:9")
    name, data, options, expected = BAD_INPUTS[case]
    kb = tmp_path / name
    kb.write_bytes(data)
    code, out, err = run_cli(["load", str(kb), "--no-index", *options], capsys)
    assert code in (2, 3)
    (line,) = err.strip().splitlines()
    assert line.startswith("kgqa: error: ") and expected in line
    assert out == ""


def test_cli_columns_needs_three(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kb = tmp_path / "kb.csv"
    kb.write_bytes(b"a,r,b\n")
    code, _, err = run_cli(["load", str(kb), "--columns", "0,1"], capsys)
    assert code == 2
    assert "Invalid value for '--columns': expected three columns" in err
