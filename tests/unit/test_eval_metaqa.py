"""Question files in MetaQA's layout (kgqa.eval.datasets) and seeded sampling."""

from __future__ import annotations

import random

import pytest
from test_eval_fakes import BANDS, DATA

from kgqa.errors import ConfigError, KBFormatError
from kgqa.eval import datasets

pytestmark = pytest.mark.unit


def test_parse_line_entity_and_answers():
    q = datasets.parse_line(
        "what movies did [Wim Wenders] direct\tParis, Texas|Wings of Desire\n", 7
    )
    assert q.id == 7
    assert q.entity == "Wim Wenders"
    assert q.answers == ("Paris, Texas", "Wings of Desire")  # a comma inside a title survives
    assert q.plain_text == "what movies did Wim Wenders direct"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("no tab here [X]", "expected 'question<TAB>answers'"),
        ("no entity\tA", r"no \[bracketed\] topic entity"),
        ("who is [X]\t|", "no gold answers"),
    ],
)
def test_parse_line_errors_name_the_line(line, message):
    with pytest.raises(KBFormatError, match=message) as err:
        datasets.parse_line(line, 12, "f.txt")
    assert "f.txt:12" in str(err.value)


def test_load_split_reads_qtypes_and_line_numbers():
    qs = datasets.load_split(DATA, 1, "dev")
    assert [q.id for q in qs] == list(range(1, 8))
    assert qs[1].qtype == "director_to_movie"
    assert all(q.hops == 1 for q in qs)
    two = datasets.load_split(DATA, 2, "dev")
    assert two[3].answers == ("2005", "2007")


def test_missing_split_says_what_exists(tmp_path):
    (tmp_path / "1-hop").mkdir()
    (tmp_path / "1-hop" / "qa_dev.txt").write_text("who [X]\tY\n")
    with pytest.raises(ConfigError, match="found: qa_dev.txt"):
        datasets.question_file(tmp_path, 1, "test")
    with pytest.raises(ConfigError, match="no 4-hop questions .*question sets there: 1-hop"):
        datasets.question_file(tmp_path, 4, "dev")


def test_qtype_file_shorter_than_questions_is_an_error(tmp_path):
    q = tmp_path / "qa_dev.txt"
    q.write_text("who [X]\tY\nwho [Z]\tW\n")
    t = tmp_path / "qa_dev_qtype.txt"
    t.write_text("a\n")
    with pytest.raises(KBFormatError, match="1 lines"):
        datasets.read_questions(q, t)


def _questions(n):
    return [datasets.parse_line(f"q{i} [E{i}]\tA{i}", i) for i in range(1, n + 1)]


def test_sample_is_determined_by_the_seed():
    qs = _questions(200)
    a = datasets.sample(qs, 20, seed=3)
    assert a == datasets.sample(qs, 20, seed=3)
    assert [q.id for q in a] != [q.id for q in datasets.sample(qs, 20, seed=4)]
    # Exactly random.Random(seed).sample over the file order, as documented.
    assert a == random.Random(3).sample(qs, k=len(qs))[:20]
    assert len({q.id for q in a}) == 20


def test_smaller_sample_is_a_prefix_of_a_larger_one():
    qs = _questions(200)
    assert datasets.sample(qs, 30, seed=0) == datasets.sample(qs, 100, seed=0)[:30]


def test_no_limit_or_a_large_limit_keeps_file_order():
    qs = _questions(10)
    assert datasets.sample(qs, None, seed=1) == qs
    assert datasets.sample(qs, 50, seed=1) == qs


def test_entity_names_from_kb():
    names = datasets.read_entity_names(DATA / "kb.txt")
    assert {"Paris, Texas", "clint eastwood", "Clint Eastwood", "1998"} <= names
    assert "directed_by" not in names


# -- any dataset in the layout ----------------------------------------------------------------


def test_question_sets_are_the_folders_a_data_folder_has(tmp_path):
    assert [s.name for s in datasets.Dataset(BANDS).sets()] == ["1-hop", "2-hop", "conj"]
    assert [s.name for s in datasets.Dataset(DATA).sets()] == ["1-hop", "2-hop"]
    (tmp_path / "10-hop").mkdir()
    (tmp_path / "10-hop" / "qa_dev.txt").write_text("q [X]\tY\n")
    (tmp_path / "2-hop").mkdir()
    (tmp_path / "2-hop" / "qa_dev.txt").write_text("q [X]\tY\n")
    (tmp_path / "empty-hop").mkdir()
    (tmp_path / "3-hop").mkdir()  # no question file: not a set
    assert [s.name for s in datasets.Dataset(tmp_path).sets()] == ["2-hop", "10-hop"]
    assert datasets.Dataset(BANDS).name == "bands"


def test_question_set_names():
    two = datasets.QuestionSet.named("2")
    assert two == datasets.QuestionSet.named("2-hop") == datasets.QuestionSet("2-hop", 2)
    assert (two.key, two.slug) == (2, "2hop")
    conj = datasets.QuestionSet.named("conj")
    assert (conj.hops, conj.key, conj.slug) == (None, "conj", "conj")
    with pytest.raises(ConfigError, match="not a question set"):
        datasets.QuestionSet.named("../x")


def test_conj_questions_carry_every_entity_and_no_hop_count():
    qs = datasets.Dataset(BANDS).load(datasets.QuestionSet.named("conj"), "dev")
    assert [q.entities for q in qs][:2] == [("Aster City", "Dune Rock"), ("Ida Vale", "Bo Renn")]
    assert all(q.hops is None and q.qtype is None for q in qs)
    assert qs[0].plain_text == "which band formed in Aster City plays Dune Rock"
    assert qs[2].answers == ("Mara Quill", "Ida Vale")


def test_an_entity_named_twice_is_one_topic_entity():
    q = datasets.parse_line("is [A] older than [ B ] or [A]\tA", 1)
    assert q.entities == ("A", "B")


def test_entity_names_come_from_the_data_folders_kb():
    names = datasets.Dataset(BANDS).entity_names()
    assert names is not None and {"lumen quartet", "veloria", "cello"} <= names
    assert datasets.Dataset(BANDS / "conj").entity_names() is None  # no kb.txt there
