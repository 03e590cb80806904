"""The MetaQA reader, triple ids and the load flow (with a fake store: no Neo4j)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from kgqa.errors import KBFormatError
from kgqa.graph.load import LoadReport, check_problems, describe_problems, load_kb
from kgqa.graph.neo4j_store import DuplicateId
from kgqa.loaders import formats, get
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
    assert get("metaqa") is read
    with pytest.raises(ConfigError, match="known: .*metaqa"):
        get("nope")


# -- load flow -----------------------------------------------------------------------------
class FakeStore:
    """Records writes and behaves like MERGE: writing a name or id twice creates nothing."""

    def __init__(self, duplicates: list[DuplicateId] | None = None):
        self.calls: list[str] = []
        self.names: set[str] = set()
        self.ids: set[int] = set()
        self.batch_sizes: list[int] = []
        self._duplicates = duplicates or []

    def ensure_schema(self) -> None:
        self.calls.append("schema")

    def merge_entities(self, names: Sequence[str]) -> int:
        self.calls.append("entities")
        self.batch_sizes.append(len(names))
        new = set(names) - self.names
        self.names |= new
        return len(new)

    def merge_triples(self, triples: Sequence[RawTriple]) -> int:
        assert all(t.subject in self.names and t.object in self.names for t in triples)
        self.calls.append("triples")
        self.batch_sizes.append(len(triples))
        new = {t.id for t in triples} - self.ids
        self.ids |= new
        return len(new)

    def duplicate_triple_ids(self, limit: int = 20) -> list[DuplicateId]:
        self.calls.append("check")
        return self._duplicates[:limit]

    def refresh_statistics(self) -> None:
        self.calls.append("statistics")


def kb_text(n: int) -> bytes:
    return b"".join(f"movie {i}|directed_by|person {i % 3}\n".encode() for i in range(n))


def test_load_writes_schema_then_entities_then_triples_in_batches() -> None:
    parsed = parse_lines(lines(kb_text(10)), "kb.txt")
    store = FakeStore()
    progressed: list[int] = []
    report = load_kb(store, parsed, batch_size=4, progress=progressed.append)
    # 13 entities in batches of 4, then 10 triples in batches of 4.
    assert store.calls == (
        ["schema"] + ["entities"] * 4 + ["triples"] * 3 + ["statistics", "check"]
    )
    assert store.batch_sizes == [4, 4, 4, 1, 4, 4, 2]
    assert sum(progressed) == len(parsed.entities) + len(parsed.triples) == 23
    assert report.triples_written == 10
    assert report.entities_written == 13
    assert report.triples_in_file == 10
    assert report.lines_read == 10
    assert report.rejected == 0


def test_second_load_writes_nothing_new() -> None:
    parsed = parse_lines(lines(kb_text(10)), "kb.txt")
    store = FakeStore()
    load_kb(store, parsed)
    again = load_kb(store, parsed)
    assert (again.triples_written, again.entities_written) == (0, 0)
    assert "0 written, 10 already present" in again.summary()


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
    assert "1 lines rejected" in report.summary()


def test_empty_file_is_an_error() -> None:
    with pytest.raises(KBFormatError, match="no triples to load"):
        check_problems(parse_lines(lines(b"\n\n"), "empty.txt"))
    with pytest.raises(KBFormatError, match=r"no triples to load \(1 bad lines\)"):
        check_problems(parse_lines(lines(b"bad\n"), "bad.txt"), on_error="skip")


def test_problem_listing_stops_at_twenty_then_counts() -> None:
    problems = [(n, "empty subject") for n in range(1, 26)]
    text = describe_problems(problems)
    assert text.count("empty subject") == 20
    assert "line 20:" in text and "line 21:" not in text
    assert text.endswith("... and 5 more")


def test_a_collision_found_in_the_graph_after_loading_raises() -> None:
    parsed = parse_lines(lines(kb_text(3)), "kb.txt")
    clash = DuplicateId(7, 2, (("a", "r", "b"), ("c", "s", "d")))
    with pytest.raises(
        KBFormatError, match=r"id 7 on 2 relationships, e.g. \(a, r, b\); \(c, s, d\)"
    ):
        load_kb(FakeStore(duplicates=[clash]), parsed)


def test_invalid_arguments_are_rejected() -> None:
    parsed = parse_lines(lines(kb_text(1)))
    with pytest.raises(ValueError):
        load_kb(FakeStore(), parsed, batch_size=0)
    with pytest.raises(ValueError):
        load_kb(FakeStore(), parsed, on_error="ignore")  # type: ignore[arg-type]


def test_report_summary_names_every_figure() -> None:
    report = LoadReport("kb.txt", 12, 9, 5, 5, 9, 2, 1, 0, 1.25)
    assert report.summary() == (
        "kb.txt: 12 lines read, 9 triples (9 written, 0 already present), 5 new entities, "
        "2 duplicate lines, 1 lines rejected, 0 blank, 1.2 s"
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
