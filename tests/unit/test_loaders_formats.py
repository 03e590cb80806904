"""The csv, tsv, jsonl, nt and ttl readers: good files, bad lines with their numbers, the
options, and what RDF terms become (no Neo4j)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgqa.errors import ConfigError, KBFormatError
from kgqa.loaders import ReadOptions, open_kb
from kgqa.loaders.base import KBFile, RawTriple, triple_id

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).parent.parent / "fixtures" / "loaders"


def write(tmp_path: Path, name: str, data: bytes | str) -> Path:
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def read_all(kb: KBFile) -> tuple[list[tuple[int, str]], list[RawTriple]]:
    problems = list(kb.check())
    return problems, list(kb.stream())


def spo(triples: list[RawTriple]) -> list[tuple[str, str, str]]:
    return [(t.subject, t.relation, t.object) for t in triples]


# -- csv / tsv ---------------------------------------------------------------------------------
def test_csv_with_a_header_finds_the_named_columns_and_quoting() -> None:
    problems, triples = read_all(open_kb(FIXTURES / "movies.csv"))
    assert problems == []
    assert spo(triples) == [
        ("Heat", "directed_by", "Michael Mann"),
        ("Crouching Tiger, Hidden Dragon", "directed_by", "Ang Lee"),
        ("Heat", "release_year", "1995"),
        ('The "Quoted" Film', "directed_by", "Ang Lee"),
    ]
    assert [t.line for t in triples] == [2, 3, 4, 6]
    assert triples[0].id == triple_id("Heat", "directed_by", "Michael Mann")
    assert triples[0].subject_iri is None


def test_csv_without_a_header_takes_the_first_three_columns(tmp_path: Path) -> None:
    kb = write(
        tmp_path, "kb.csv", "Heat,directed_by,Michael Mann,x\nAli,directed_by,Michael Mann,y\n"
    )
    _, triples = read_all(open_kb(kb))
    assert spo(triples)[0] == ("Heat", "directed_by", "Michael Mann")
    assert len(triples) == 2


@pytest.mark.parametrize(
    ("columns", "header"),
    [(("head", "rel", "tail"), None), (("2", "0", "1"), True), (("HEAD", "Rel", "tail"), None)],
)
def test_csv_columns_by_name_or_index(
    tmp_path: Path, columns: tuple[str, str, str], header: bool | None
) -> None:
    kb = write(tmp_path, "kb.csv", "rel,tail,head\ndirected_by,Michael Mann,Heat\n")
    _, triples = read_all(open_kb(kb, options=ReadOptions(columns=columns, header=header)))
    assert spo(triples) == [("Heat", "directed_by", "Michael Mann")]


def test_csv_no_header_reads_the_first_row_as_a_triple(tmp_path: Path) -> None:
    kb = write(tmp_path, "kb.csv", "subject,relation,object\nHeat,directed_by,Michael Mann\n")
    _, triples = read_all(open_kb(kb, options=ReadOptions(header=False)))
    assert spo(triples)[0] == ("subject", "relation", "object")


def test_csv_with_the_wrong_column_count_reports_the_line(tmp_path: Path) -> None:
    kb = write(tmp_path, "kb.csv", "a,r,b\nc,r\nd,r,e,f\n\ng,r,h\n")
    problems, triples = read_all(open_kb(kb))
    assert problems == [
        (2, "expected 3 fields separated by ',', found 2"),
        (3, "expected 3 fields separated by ',', found 4"),
    ]
    assert [t.line for t in triples] == [1, 5]


def test_csv_bom_crlf_bad_bytes_empty_and_oversized_fields(tmp_path: Path) -> None:
    data = (
        b"\xef\xbb\xbfsubject,relation,object\r\n"
        b"a,r,b\r\n"
        b"c,r,\xff\r\n"
        b" ,r,d\r\n"
        b'"multi\r\nline",r,e\r\n' + b"x" * 5000 + b",r,f\r\n"
    )
    problems, triples = read_all(open_kb(write(tmp_path, "kb.csv", data)))
    assert spo(triples) == [("a", "r", "b")]
    reasons = dict(problems)
    assert reasons[3] == "not valid UTF-8"
    assert reasons[4] == "empty subject"
    assert reasons[5] == (
        "subject contains the control character U+000D (character 6) "
        "(lines 5-6: a quoted field spans them)"
    )
    assert reasons[7].startswith("subject is too long for Neo4j to index: 5,000 characters")


def test_csv_a_missing_named_column_is_one_line(tmp_path: Path) -> None:
    kb = write(tmp_path, "kb.csv", "s,p,o\na,r,b\n")
    with pytest.raises(KBFormatError) as info:
        list(open_kb(kb, options=ReadOptions(columns=("s", "p", "obj"))).check())
    assert str(info.value) == (
        f"{kb}: line 1: the header has no column 'obj' (columns: s, p, o); choose with --columns"
    )
    with pytest.raises(KBFormatError, match="no column 5 \\(0-based\\) in a row of 3 fields"):
        list(open_kb(kb, options=ReadOptions(columns=("0", "1", "5"))).check())


def test_csv_option_mistakes_are_config_errors(tmp_path: Path) -> None:
    kb = write(tmp_path, "kb.csv", "s,p,o\n")
    with pytest.raises(ConfigError, match="--no-header says the file has no header row"):
        open_kb(kb, options=ReadOptions(columns=("s", "p", "o"), header=False))
    with pytest.raises(ConfigError, match="names one column twice"):
        open_kb(kb, options=ReadOptions(columns=("s", "s", "o")))


def test_tsv_keeps_quotes_as_written(tmp_path: Path) -> None:
    kb = write(tmp_path, "kb.tsv", 'Heat\tdirected_by\t"Michael" Mann\nbad line\n')
    problems, triples = read_all(open_kb(kb))
    assert spo(triples) == [("Heat", "directed_by", '"Michael" Mann')]
    assert problems == [(2, "expected 3 fields separated by tab, found 1")]


# -- jsonl ---------------------------------------------------------------------------------------
def test_jsonl_reads_objects_and_number_values() -> None:
    problems, triples = read_all(open_kb(FIXTURES / "movies.jsonl"))
    assert problems == []
    assert spo(triples) == [
        ("Heat", "directed_by", "Michael Mann"),
        ("Heat", "release_year", "1995"),
        ("Ali", "directed_by", "Michael Mann"),
    ]
    assert [t.line for t in triples] == [1, 2, 4]


def test_jsonl_bad_lines_are_reported_with_their_numbers(tmp_path: Path) -> None:
    data = (
        b'\xef\xbb\xbf{"subject": "a", "relation": "r", "object": "b"}\r\n'
        b'{"subject": "a", "relation": "r", \r\n'
        b"[1, 2]\r\n"
        b'{"s": "a", "p": "r", "o": "b"}\r\n'
        b'{"subject": "a", "relation": "r", "object": null}\r\n'
        b'{"subject": "a", "relation": "r", "object": "\\ud800"}\r\n'
        b'{"subject": "\xff", "relation": "r", "object": "b"}\r\n'
    )
    problems, triples = read_all(open_kb(write(tmp_path, "kb.jsonl", data)))
    assert spo(triples) == [("a", "r", "b")]
    reasons = dict(problems)
    assert reasons[2].startswith("not valid JSON: Expecting property name enclosed in double")
    assert reasons[3] == "expected a JSON object, found an array"
    assert reasons[4] == (
        "no key 'subject' for the subject (keys: s, p, o); choose keys with --columns"
    )
    assert reasons[5] == "the object ('object') must be a string or a number, found null"
    assert reasons[6].startswith("object is not valid Unicode (a lone surrogate")
    assert reasons[7] == "not valid UTF-8 (byte 13)"


def test_jsonl_keys_are_chosen_with_columns(tmp_path: Path) -> None:
    kb = write(tmp_path, "kb.jsonl", '{"s": "a", "p": "r", "o": "b"}\n')
    _, triples = read_all(open_kb(kb, options=ReadOptions(columns=("s", "p", "o"))))
    assert spo(triples) == [("a", "r", "b")]
    with pytest.raises(ConfigError, match="--header does not apply to the jsonl format"):
        open_kb(kb, options=ReadOptions(header=True))


# -- N-Triples / Turtle ------------------------------------------------------------------------
EX = "http://example.org/"
MOVIES = {
    ("Heat", "directed_by", "Michael Mann"),
    ("Heat", "release_year", "1995"),
    ("Heat", "starred_actors", "Al Pacino"),
    ("Ali", "directed_by", "Michael Mann"),
    ("Ali", "release_year", "2001"),
    ("Heat", "filmed_in", f"Paris <{EX}city/Paris>"),
    ("Ali", "starred_actors", f"Paris <{EX}person/Paris>"),
    ("Heat", "http://schema.org/name", "Heat"),
    ("Heat", "http://xmlns.com/foaf/0.1/name", "Heat"),
}


@pytest.mark.parametrize("name", ["movies.nt", "movies.ttl"])
def test_rdf_labels_become_names_and_iris_stay_as_ids(name: str) -> None:
    kb = open_kb(FIXTURES / name)
    problems, triples = read_all(kb)
    assert problems == []
    assert set(spo(triples)) == MOVIES
    assert kb.stats.triples == 9
    assert kb.stats.labels == 6
    assert kb.stats.left_out == {"blank node": 2}
    heat = next(t for t in triples if t.relation == "directed_by" and t.subject == "Heat")
    assert (heat.subject_iri, heat.object_iri, heat.relation_iri) == (
        f"{EX}film/Heat",
        f"{EX}person/Michael_Mann",
        f"{EX}prop/directed_by",
    )
    year = next(t for t in triples if t.relation == "release_year" and t.subject == "Heat")
    assert year.object_iri is None  # a literal
    assert year.id == triple_id("Heat", "release_year", "1995")


def test_ntriples_bad_lines_are_skipped_exactly(tmp_path: Path) -> None:
    data = (
        b"\xef\xbb\xbf<http://e/a> <http://p/r> <http://e/b> .\r\n"
        b'<http://e/a> <http://p/r> "x" oops .\r\n'
        b"<http://e/a> <http://p/r> <http://e/c>\r\n"
        b'<http://e/a> <http://p/r> "x\\u0000y" .\r\n'
        b'<http://e/a> <http://p/r> "' + b"y" * 5000 + b'" .\r\n'
        b"<http://e/d> <http://p/r> <http://e/e> .\r\n"
        b'<http://e/a> <http://p/r> "\xff" .\n'
    )
    kb = open_kb(write(tmp_path, "kb.nt", data))
    problems, triples = read_all(kb)
    assert spo(triples) == [("a", "r", "b"), ("d", "r", "e")]
    assert [t.line for t in triples] == [1, 6]
    reasons = dict(problems)
    assert sorted(reasons) == [2, 3, 4, 5, 7]
    assert all(reasons[n].startswith("not valid RDF: ") for n in (2, 3, 7))
    assert reasons[4] == "object contains the control character U+0000 (character 2)"
    assert reasons[5].startswith("object is too long for Neo4j to index: 5,000 characters")
    assert kb.stats.lines_read == 7


def test_turtle_syntax_error_stops_the_read_with_its_line(tmp_path: Path) -> None:
    kb = write(tmp_path, "kb.ttl", "@prefix ex: <http://e/> .\nex:a ex:r ex:b .\nex:x ex:y .\n")
    with pytest.raises(KBFormatError) as info:
        list(open_kb(kb).check())
    message = str(info.value)
    assert message.startswith(f"{kb}: line 3: not valid RDF: ")
    assert "cannot be skipped, even with --on-error skip; nothing was written" in message
    assert "\n" not in message


def test_rdf_literals_lose_line_breaks_and_local_names_are_decoded(tmp_path: Path) -> None:
    kb = write(
        tmp_path,
        "kb.ttl",
        '<http://e/Caf%C3%A9> <http://e/note> """two\n  lines""" .\n'
        "<http://e/a/> <http://e/r> <http://e/x%0Ay> .\n",
    )
    _, triples = read_all(open_kb(kb))
    # "x%0Ay" would decode to a line break: kept as written. "http://e/a/" has no local name.
    assert spo(triples) == [("Café", "note", "two   lines"), ("http://e/a/", "r", "x%0Ay")]


def test_rdf_stream_needs_check_first() -> None:
    with pytest.raises(RuntimeError, match="needs check\\(\\) first"):
        list(open_kb(FIXTURES / "movies.nt").stream())
