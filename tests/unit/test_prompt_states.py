"""Pinned prompt states kept on disk between processes (kgqa.llm.llama_cpp._StateFiles)."""

import os

import numpy as np
import pytest

pytest.importorskip("llama_cpp")

from llama_cpp import LlamaState  # noqa: E402

from kgqa.llm.llama_cpp import _StateFiles  # noqa: E402


def _state(n_tokens=5, blob=b"kv-cache-bytes" * 10):
    ids = np.zeros(16, dtype=np.intc)
    ids[:n_tokens] = np.arange(1, n_tokens + 1)
    return LlamaState(
        input_ids=ids,
        scores=np.zeros((1, 32), dtype=np.single),
        n_tokens=n_tokens,
        llama_state=blob,
        llama_state_size=len(blob),
        seed=7,
    )


def test_a_written_state_reads_back_whole(tmp_path):
    files = _StateFiles(tmp_path / "states")
    files.write("k1", _state())
    back = files.read("k1")
    assert back.n_tokens == 5 and back.seed == 7
    assert back.input_ids.tolist() == _state().input_ids.tolist()
    assert back.llama_state == _state().llama_state and back.llama_state_size == 140
    assert back.scores.shape == (1, 32)
    assert files.read("absent") is None
    assert not list((tmp_path / "states").glob("*.tmp*"))  # written atomically


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[:-3],  # cut short
        lambda data: b"NOTKGQA!" + data[8:],  # another format
        lambda data: b"",
    ],
)
def test_a_damaged_file_is_a_miss_with_a_warning(tmp_path, damage, caplog):
    files = _StateFiles(tmp_path)
    files.write("k1", _state())
    path = tmp_path / "k1.state"
    path.write_bytes(damage(path.read_bytes()))
    assert files.read("k1") is None
    assert "ignoring pinned prompt state" in caplog.text


def test_a_file_renamed_to_another_key_is_not_served(tmp_path):
    files = _StateFiles(tmp_path)
    files.write("k1", _state())
    os.replace(tmp_path / "k1.state", tmp_path / "k2.state")
    assert files.read("k2") is None


def test_only_the_newest_files_are_kept(tmp_path):
    files = _StateFiles(tmp_path, keep=2)
    for i, key in enumerate(["a", "b", "c"]):
        files.write(key, _state())
        os.utime(tmp_path / f"{key}.state", (1000 + i, 1000 + i))
    files.write("d", _state())
    assert sorted(p.stem for p in tmp_path.glob("*.state")) == ["c", "d"]


def test_an_unwritable_folder_costs_time_not_an_error(tmp_path, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    _StateFiles(blocker / "states").write("k1", _state())
    assert "cannot keep the pinned prompt state" in caplog.text
