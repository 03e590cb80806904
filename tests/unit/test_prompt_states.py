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


def test_cpu_repack_off_loads_without_extra_buffers_and_restores_the_default():
    import llama_cpp.llama_cpp as capi

    from kgqa.llm.llama_cpp import _extra_buffers

    default = capi.llama_model_default_params
    assert default().use_extra_bufts  # llama.cpp's own default: repack on CPU
    with _extra_buffers(True):
        assert capi.llama_model_default_params().use_extra_bufts
    with pytest.raises(RuntimeError), _extra_buffers(False):
        assert not capi.llama_model_default_params().use_extra_bufts
        raise RuntimeError("the load failed")
    assert capi.llama_model_default_params is default


def test_a_state_pinned_without_repack_has_its_own_key_and_a_key_names_the_build(
    tmp_path,
):
    from kgqa.llm.llama_cpp import LlamaCppLLM

    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")

    class _Ctx:
        def n_ctx(self):
            return 4096

    keys = {}
    for repack in (True, False):
        llm = LlamaCppLLM(model, cpu_repack=repack)
        llm._llama = _Ctx()
        keys[repack] = llm._state_key([{"role": "system", "content": "pinned"}])
    assert keys[True] != keys[False]
    # the key of a repacked load: the model file, llama.cpp's version and CPU build, the
    # context, the messages (no repack field)
    import hashlib
    import json

    import llama_cpp

    from kgqa.llm.llama_cpp import cpu_features

    stat = model.stat()
    before = {
        "model": str(model.resolve()),
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "llama_cpp": llama_cpp.__version__,
        "cpu": cpu_features(),
        "n_ctx": 4096,
        "n_gpu_layers": 0,
        "messages": [{"role": "system", "content": "pinned"}],
    }
    text = json.dumps(before, sort_keys=True, ensure_ascii=False)
    assert keys[True] == hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


@pytest.mark.parametrize(
    ("value", "one_question", "features", "repack"),
    [
        ("auto", True, "AVX2 = 1 | REPACK = 1", False),
        ("auto", False, "AVX2 = 1 | REPACK = 1", True),
        # a build with AVX-512 VNNI reads prompts faster from the weights as stored
        ("auto", False, "AVX2 = 1 | AVX512 = 1 | AVX512_VNNI = 1 | REPACK = 1", False),
        ("on", True, "AVX2 = 1 | AVX512_VNNI = 1", True),
        ("off", False, "AVX2 = 1", False),
    ],
)
def test_cpu_repack_auto_loads_as_stored_for_one_question_and_on_vnni_builds(
    tmp_path, monkeypatch, value, one_question, features, repack
):
    from kgqa.factory import Factory
    from kgqa.llm import llama_cpp as kgqa_llama
    from kgqa.settings import load_settings

    monkeypatch.setattr(kgqa_llama, "cpu_features", lambda: features)
    monkeypatch.chdir(tmp_path)
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    env = {"HOME": str(tmp_path), "KGQA_LLM_MODEL": str(model), "KGQA_LLM_CPU_REPACK": value}
    factory = Factory(load_settings(env=env), one_question=one_question)
    assert factory.llm().cpu_repack is repack  # built, not loaded


def test_cpu_repack_refuses_another_word(tmp_path, monkeypatch):
    from kgqa.errors import ConfigError
    from kgqa.factory import Factory
    from kgqa.settings import load_settings

    monkeypatch.chdir(tmp_path)
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    env = {"HOME": str(tmp_path), "KGQA_LLM_MODEL": str(model), "KGQA_LLM_CPU_REPACK": "maybe"}
    with pytest.raises(ConfigError, match="llm.cpu_repack must be"):
        Factory(load_settings(env=env)).llm()
