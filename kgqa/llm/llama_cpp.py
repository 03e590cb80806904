"""The llama.cpp backend (llama-cpp-python).

The model is loaded on the first call (or :meth:`LlamaCppLLM.warm_up`), never in ``__init__``.
Chat prompts use the chat template stored in the GGUF. llama.cpp keeps the evaluated tokens of
the previous call and re-evaluates only what follows the longest common prefix, so prompts
whose fixed part (instructions, in-context examples) comes first are cheaper when repeated.
A pinned prefix (:meth:`LlamaCppLLM.pin_prefix`) is evaluated once and, with ``state_dir``,
kept on disk for the next process (:class:`_StateFiles`).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import json
import logging
import os
import re
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kgqa.errors import ModelNotFound
from kgqa.llm.base import (
    CHAT_TOKENS_PER_MESSAGE,
    CHAT_TOKENS_PER_PROMPT,
    Completion,
    GenParams,
    Prompt,
    context_error,
)

if TYPE_CHECKING:
    import llama_cpp

_TOO_LONG = re.compile(r"Requested tokens \((\d+)\) exceed context window")
log = logging.getLogger(__name__)


class LlamaCppLLM:
    """An :class:`~kgqa.llm.base.LLM` over a local GGUF file.

    ``n_threads=0`` uses every core; ``n_gpu_layers`` > 0 offloads layers on a CUDA/Metal
    build of llama-cpp-python (ignored by a CPU build). :meth:`pin_prefix` keeps a fixed prompt
    prefix (in-context examples) evaluated across calls; with ``state_dir`` the evaluated
    prefix is also kept on disk, so the next process loads it instead of evaluating it again.
    """

    def __init__(
        self,
        model_path: str | Path,
        *,
        name: str | None = None,
        n_ctx: int = 4096,
        n_threads: int = 0,
        n_gpu_layers: int = 0,
        seed: int = 0,
        verbose: bool = False,
        state_dir: str | Path | None = None,
        cpu_repack: bool = True,
        grammar_check_first: bool = True,
    ):
        self.model_path = Path(model_path)
        self.name = name or self.model_path.stem
        self.n_ctx = n_ctx
        self.n_threads = n_threads or (os.cpu_count() or 1)
        self.n_gpu_layers = n_gpu_layers
        self.seed = seed
        self.verbose = verbose
        self.cpu_repack = cpu_repack
        self.load_seconds: float | None = None
        self._llama: llama_cpp.Llama | None = None
        self._grammars: dict[str, Any] = {}
        self._pending_pins: list[list[Any]] = []
        self._pins = _PinnedStates()
        self._state_files = _StateFiles(Path(state_dir)) if state_dir is not None else None
        # How the pinned prefixes came to be: evaluated here or loaded from state_dir.
        self.pins_evaluated = 0
        self.pins_loaded = 0
        self.pin_seconds = 0.0
        # One llama context holds one KV cache: calls must not interleave.
        self._lock = threading.Lock()
        # Greedy calls under a grammar check the model's own choice against the grammar
        # before they hold every token of the vocabulary to it (:class:`_GrammarChecked`): the
        # same tokens, without llama.cpp's pass of the grammar over the whole vocabulary at
        # each step. False: the grammar in llama-cpp-python's sampler chain, as before.
        self.grammar_check_first = grammar_check_first
        # Of the tokens so chosen, how many the grammar refused as the model's best (and of
        # those, how many needed every token of the vocabulary checked).
        self.grammar_refused = 0
        self.grammar_whole = 0

    def warm_up(self) -> None:
        """Load the model now (it takes seconds); later calls reuse it."""
        if self._llama is not None:
            return
        try:
            import llama_cpp
        except ImportError as e:
            raise ModelNotFound(
                "llama-cpp-python is not installed: pip install llama-cpp-python==0.3.36"
            ) from e
        if not self.model_path.is_file():
            raise ModelNotFound(f"model file {self.model_path} does not exist")
        start = time.perf_counter()
        try:
            with _extra_buffers(self.cpu_repack):
                self._llama = llama_cpp.Llama(
                    model_path=str(self.model_path),
                    n_ctx=self.n_ctx,
                    n_threads=self.n_threads,
                    n_threads_batch=self.n_threads,
                    n_gpu_layers=self.n_gpu_layers,
                    seed=self.seed,
                    verbose=self.verbose,
                )
        except (ValueError, RuntimeError) as e:
            raise ModelNotFound(f"llama.cpp cannot load {self.model_path}: {e}") from e
        self.load_seconds = time.perf_counter() - start

    def _grammar(self, grammar: str) -> Any:
        if grammar not in self._grammars:
            from llama_cpp import LlamaGrammar

            text = grammar.strip()
            self._grammars[grammar] = (
                LlamaGrammar.from_json_schema(text, verbose=self.verbose)
                if text.startswith("{")
                else LlamaGrammar.from_string(text, verbose=self.verbose)
            )
        return self._grammars[grammar]

    def count_tokens(self, prompt: Prompt) -> int:
        """The prompt's tokens: exact for text; for chat messages, their contents plus an upper
        bound of what the chat template adds (the model loads on the first call)."""
        with self._lock:  # the model loads once, even when two threads ask first
            self.warm_up()
        assert self._llama is not None
        llama = self._llama

        def tokens(text: str) -> int:
            return len(llama.tokenize(text.encode("utf-8"), add_bos=False, special=True))

        if isinstance(prompt, str):
            return tokens(prompt) + 1
        messages = list(prompt)
        return CHAT_TOKENS_PER_PROMPT + sum(
            tokens(m["content"]) + CHAT_TOKENS_PER_MESSAGE for m in messages
        )

    def complete(self, prompt: Prompt, params: GenParams) -> Completion:
        with self._lock:
            self.warm_up()
            try:
                return self._complete(prompt, params)
            except ValueError as e:
                # llama-cpp-python refuses a prompt that fills the window (the pinned prefixes
                # evaluated first included): "Requested tokens (N) exceed context window of M".
                found = _TOO_LONG.search(str(e))
                if found is None:
                    raise
                raise context_error(int(found.group(1)), self.n_ctx) from e

    def _complete(self, prompt: Prompt, params: GenParams) -> Completion:
        """One call, under the lock, with the model loaded."""
        assert self._llama is not None
        kwargs: dict[str, Any] = dict(
            max_tokens=params.max_tokens,
            temperature=params.temperature,
            top_k=params.top_k,
            min_p=params.min_p,
            # top_p stays off (1.0): the paper samples with top-k and min-p only.
            top_p=1.0,
            repeat_penalty=params.repeat_penalty,
            stop=list(params.stop),
            seed=self.seed if params.seed is None else params.seed,
            grammar=self._grammar(params.grammar) if params.grammar else None,
        )
        checked = None
        if kwargs["grammar"] is not None and self._checks_first(params):
            from llama_cpp import LogitsProcessorList

            checked = _GrammarChecked(self._llama, kwargs.pop("grammar"))
            kwargs["logits_processor"] = LogitsProcessorList([checked])
        # Only calls that continue a pinned prompt get the cache, and it detaches itself once
        # looked up: with a cache still set after the call, llama-cpp-python would save the full
        # state (~300 MB of logits) after each call.
        cache = self._pinned_cache_for(prompt)
        start = time.perf_counter()
        self._llama.cache = cache.serving(self._llama) if cache is not None else None
        try:
            if isinstance(prompt, str):
                out: Any = self._llama.create_completion(prompt, **kwargs)
                text = out["choices"][0]["text"]
            else:
                messages: Any = list(prompt)
                out = self._llama.create_chat_completion(messages=messages, **kwargs)
                text = out["choices"][0]["message"]["content"] or ""
        finally:
            self._llama.cache = None
            if checked is not None:
                self.grammar_refused += checked.refused
                self.grammar_whole += checked.whole
        seconds = time.perf_counter() - start
        usage = out.get("usage") or {}
        return Completion(
            text=text,
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            seconds=seconds,
            finish_reason=out["choices"][0].get("finish_reason") or "stop",
        )

    def _checks_first(self, params: GenParams) -> bool:
        """Whether a call's grammar can be checked on the chosen token first: only under
        greedy decoding with nothing after it in the sampler chain that changes the logits
        (a repeat penalty would change the choice after the check)."""
        return self.grammar_check_first and params.temperature == 0 and params.repeat_penalty == 1

    def pin_prefix(self, prompt: Prompt) -> None:
        """Keep the evaluated state of ``prompt`` so that a later chat prompt with the same
        messages except the last one starts from it, even after other prompts ran in between.

        llama.cpp by itself reuses only the prefix shared with the *previous* call; in the
        pipeline the decomposition prompt (about 500 tokens of instructions and examples)
        follows other stages, so it would be re-evaluated for every question. Cheap to call:
        the state is computed on the first call after the model is loaded.
        """
        if isinstance(prompt, str):
            raise TypeError("pin_prefix takes chat messages")
        self._pending_pins.append(list(prompt))

    def _pinned_cache_for(self, prompt: Prompt) -> Any:
        """The pinned-state cache if ``prompt`` continues a pinned prompt, else ``None``."""
        if self._pending_pins:
            start = time.perf_counter()
            for pin in self._pending_pins:
                self._pins.add(pin[:-1], self._pinned_state(pin))
            self._pending_pins.clear()
            self.pin_seconds += time.perf_counter() - start
        if isinstance(prompt, str) or not self._pins.matches(list(prompt)[:-1]):
            return None
        return self._pins

    def _pinned_state(self, pin: list[Any]) -> Any:
        """The evaluated state of ``pin``: from ``state_dir`` when a file for this model and
        prompt is there and loads, else evaluated now (and written there)."""
        assert self._llama is not None
        key = self._state_key(pin) if self._state_files is not None else None
        if self._state_files is not None and key is not None:
            state = self._state_files.read(key)
            if state is not None:
                try:
                    _load_compact(self._llama, state)  # proves it fits this context, now
                except RuntimeError as e:
                    log.warning("pinned prompt state %s does not load (%s); evaluating it", key, e)
                    self._state_files.remove(key)
                else:
                    self.pins_loaded += 1
                    return state
        self._llama.create_chat_completion(messages=pin, max_tokens=1)
        state = _compact_state(self._llama)
        self.pins_evaluated += 1
        if self._state_files is not None and key is not None:
            self._state_files.write(key, state)
        return state

    def _state_key(self, pin: list[Any]) -> str:
        """What a kept state depends on: the model file, llama.cpp's build, the context's
        shape and the prompt itself."""
        import llama_cpp

        assert self._llama is not None
        stat = self.model_path.stat()
        ident = {
            "model": str(self.model_path.resolve()),
            "size": stat.st_size,
            "mtime_ns": stat.st_mtime_ns,
            "llama_cpp": getattr(llama_cpp, "__version__", "?"),
            # a build for another CPU computes the same prefix with other kernels
            "cpu": cpu_features(),
            "n_ctx": self._llama.n_ctx(),
            "n_gpu_layers": self.n_gpu_layers,
            "messages": pin,
        }
        if not self.cpu_repack:
            # the evaluated prefix's numbers come from the kernels of one weight layout (only
            # named when off, so that the states written before the setting keep their keys)
            ident["cpu_repack"] = False
        text = json.dumps(ident, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _token_data_dtype() -> Any:
    import numpy as np

    return np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)


class _GrammarChecked:
    """Greedy decoding held to a grammar, the model's own choice checked first: a
    llama-cpp-python logits processor that picks the token the grammar would let greedy
    decoding pick and tells the grammar of it.

    llama-cpp-python puts the grammar in the sampler chain, where llama.cpp holds each of the
    vocabulary's tokens to it at every step (≈ 150k for Qwen: ≈ 13 ms a token on 2 cores, a
    quarter of a decode; bench_grammar_check.py). Greedy decoding takes the highest logit the grammar allows,
    so the highest logit is checked alone first; only when the grammar refuses it are the
    best ``TOP`` checked in order (highest logit, then lowest id: llama.cpp's greedy choice
    among ties), and only when it refuses all of those, every token. The same tokens as the
    grammar in the chain; the chosen one is raised above the rest for the greedy sampler
    after this processor (which must be the only thing in the chain that changes logits)."""

    TOP = 64

    def __init__(self, llama: Any, grammar: Any):
        from llama_cpp import llama_cpp as capi

        self._capi = capi
        self._sampler = capi.llama_sampler_init_grammar(
            llama._model.vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
        )
        if not self._sampler:
            raise ValueError("llama.cpp cannot parse the grammar")
        self._eos = int(llama.token_eos())
        # How the choices were made: the steps whose best token the grammar refused, and of
        # those, the ones that needed the whole vocabulary.
        self.refused = 0
        self.whole = 0

    def __del__(self) -> None:
        sampler, self._sampler = getattr(self, "_sampler", None), None
        if sampler:
            self._capi.llama_sampler_free(sampler)

    def _allowed(self, ids: Any, logits: Any) -> Any:
        """Which of the tokens ``ids`` (with their ``logits``) the grammar allows next."""
        import numpy as np

        capi = self._capi
        n = len(ids)
        data = (capi.llama_token_data * n)()
        view = np.frombuffer(data, dtype=_token_data_dtype())
        view["id"] = ids
        view["logit"] = logits
        view["p"] = 0.0
        candidates = capi.llama_token_data_array(data=data, size=n, selected=-1, sorted=False)
        capi.llama_sampler_apply(self._sampler, ctypes.byref(candidates))
        return view["logit"] != -np.inf  # what the grammar refuses it sets to -inf

    def _choose(self, scores: Any) -> int | None:
        import numpy as np

        best = int(np.argmax(scores))
        if self._allowed(np.array([best]), scores[best : best + 1])[0]:
            return best
        self.refused += 1
        n = min(self.TOP, len(scores) - 1)
        top = np.argpartition(-scores, n)[:n]
        top = top[np.lexsort((top, -scores[top]))]
        ok = self._allowed(top, scores[top])
        if ok.any():
            found = int(top[int(np.argmax(ok))])
            # a tie with the TOP-th logit may hide an allowed token of lower id beyond it
            if scores[found] > scores[top[-1]]:
                return found
        self.whole += 1
        every = np.arange(len(scores))
        ok = self._allowed(every, scores)
        if not ok.any():
            return None
        allowed = every[ok]
        return int(allowed[int(np.argmax(scores[allowed]))])

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import numpy as np

        chosen = self._choose(scores)
        if chosen is None:  # the grammar allows nothing: end the call
            chosen = self._eos
        else:
            self._capi.llama_sampler_accept(self._sampler, chosen)
        if int(np.argmax(scores)) != chosen:
            scores[chosen] = float(scores.max()) + 1.0
        return scores


_load_lock = threading.Lock()


@functools.cache
def cpu_features() -> str:
    """The CPU features llama.cpp was built with (its ``llama_print_system_info``, e.g.
    ``AVX2 = 1 | AVX512_VNNI = 1 | ...``)."""
    import llama_cpp

    info = llama_cpp.llama_print_system_info()
    return (info.decode() if isinstance(info, bytes) else str(info)).strip()


def repack_pays() -> bool:
    """Whether llama.cpp's repacked weight layouts (``use_extra_bufts``) make this build read
    prompts faster. Measured with ``benchmarks/bench_llm.py settings`` on a 2-core AVX-512
    machine (docs/benchmarks.md): a portable AVX2 build reads the answer prompt at 75 tokens/s
    repacked against 69 as stored, but a build with AVX-512 VNNI reads it at 127 as stored (its
    tiled VNNI matrix kernels) against 98 repacked. Repacked still generates faster (24.5 against
    20 tokens/s), but kgqa's stages read far more tokens than they write."""
    return "AVX512_VNNI = 1" not in cpu_features()


@contextlib.contextmanager
def _extra_buffers(on: bool) -> Any:
    """Models loaded inside use llama.cpp's extra CPU buffer types (the repacked weight
    layouts) only when ``on``. llama-cpp-python's ``Llama()`` takes no argument for
    ``llama_model_params.use_extra_bufts``: the default parameters it reads are changed while
    it loads (one load at a time)."""
    import llama_cpp.llama_cpp as capi

    if on:
        yield
        return
    default = capi.llama_model_default_params

    def without() -> Any:
        params = default()
        params.use_extra_bufts = False
        return params

    with _load_lock:
        setattr(capi, "llama_model_default_params", without)  # noqa: B010
        try:
            yield
        finally:
            setattr(capi, "llama_model_default_params", default)  # noqa: B010


def _compact_state(llama: Any) -> Any:
    """``llama.save_state()`` without the logits of the last batch (n_batch x n_vocab floats,
    ~300 MB for a 150k vocabulary): a pinned prefix is always followed by more prompt, whose
    evaluation writes new logits, so one zero row (broadcast by ``load_state``) stands in."""
    import numpy as np
    from llama_cpp import LlamaState, llama_cpp

    size = int(llama_cpp.llama_state_get_size(llama.ctx))
    buffer = (ctypes.c_uint8 * size)()
    written = int(llama_cpp.llama_state_get_data(llama.ctx, buffer, size))
    if written > size:
        raise RuntimeError("llama.cpp wrote more state than it said it would")
    return LlamaState(
        input_ids=llama.input_ids.copy(),
        scores=np.zeros((1, llama.n_vocab()), dtype=np.single),
        n_tokens=llama.n_tokens,
        llama_state=ctypes.string_at(buffer, written),
        llama_state_size=written,
        seed=llama._seed,
    )


def _load_compact(llama: Any, state: Any) -> None:
    """``llama.load_state(state)`` without writing the logits: that write (n_batch x n_vocab
    floats) is the first touch of ~300 MB in a new process, 0.66 s of a 0.69 s load on
    2 cores. The same fields as llama-cpp-python 0.3.36's ``load_state`` otherwise."""
    from llama_cpp import llama_cpp

    buffer = (ctypes.c_uint8 * state.llama_state_size).from_buffer_copy(state.llama_state)
    if llama_cpp.llama_state_set_data(llama.ctx, buffer, state.llama_state_size) != (
        state.llama_state_size
    ):
        raise RuntimeError("llama.cpp refused the state")
    llama.input_ids = state.input_ids.copy()
    llama.n_tokens = state.n_tokens
    llama._requires_eval = True  # the logits were not restored: evaluate before sampling
    llama._seed = state.seed


class _StateFiles:
    """Pinned prompt states kept between processes: ``<dir>/<key>.state``, one per model and
    prompt, written atomically; the newest ``keep`` stay. A file that is short, from another
    format or does not load is a miss (the prefix is evaluated again), never an error."""

    MAGIC = b"KGQAPIN1"

    def __init__(self, folder: Path, keep: int = 8):
        self.folder = folder
        self.keep = keep

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}.state"

    def read(self, key: str) -> Any:
        import numpy as np
        from llama_cpp import LlamaState

        path = self._path(key)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        try:
            if not data.startswith(self.MAGIC):
                raise ValueError("not a kgqa state file")
            at = len(self.MAGIC)
            head_len = int.from_bytes(data[at : at + 4], "little")
            head = json.loads(data[at + 4 : at + 4 + head_len])
            if head["key"] != key:
                raise ValueError("another prompt's state")
            at += 4 + head_len
            ids_bytes = 4 * int(head["n_ids"])
            ids = np.frombuffer(data[at : at + ids_bytes], dtype=np.intc).copy()
            at += ids_bytes
            blob = data[at:]
            if len(ids) != int(head["n_ids"]) or len(blob) != int(head["state_size"]):
                raise ValueError("truncated")
        except (ValueError, KeyError, TypeError) as e:
            log.warning("ignoring pinned prompt state %s: %s", path, e)
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: kept longest
        return LlamaState(
            input_ids=ids,
            scores=np.zeros((1, int(head["n_vocab"])), dtype=np.single),
            n_tokens=int(head["n_tokens"]),
            llama_state=blob,
            llama_state_size=len(blob),
            seed=int(head["seed"]),
        )

    def write(self, key: str, state: Any) -> None:
        head = json.dumps(
            {
                "key": key,
                "n_ids": int(len(state.input_ids)),
                "n_tokens": int(state.n_tokens),
                "n_vocab": int(state.scores.shape[1]),
                "state_size": int(state.llama_state_size),
                "seed": int(state.seed),
            }
        ).encode("utf-8")
        path = self._path(key)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with open(tmp, "wb") as f:
                f.write(self.MAGIC + len(head).to_bytes(4, "little") + head)
                f.write(state.input_ids.astype("intc").tobytes())
                f.write(state.llama_state)
            os.replace(tmp, path)
        except OSError as e:  # a read-only or full disk costs the next process time, no more
            log.warning("cannot keep the pinned prompt state in %s: %s", self.folder, e)
            with contextlib.suppress(OSError):
                tmp.unlink()
            return
        self._prune()

    def remove(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def _prune(self) -> None:
        def mtime(p: Path) -> float:
            try:
                return p.stat().st_mtime
            except OSError:
                return 0.0

        files = sorted(self.folder.glob("*.state"), key=mtime, reverse=True)
        for old in files[self.keep :]:
            old.unlink(missing_ok=True)


class _PinnedStates:
    """A llama-cpp-python prompt cache that serves pinned states and stores nothing else.

    Duck-types ``llama_cpp.BaseLlamaCache`` (``__getitem__`` / ``__contains__`` /
    ``__setitem__``): llama-cpp-python loads the returned state when its prefix is longer
    than what the context already holds, and evaluates only the rest of the prompt.
    """

    def __init__(self) -> None:
        self._states: list[tuple[list[Any], Any]] = []

    def serving(self, llama: Any) -> _OneLookup:
        """This cache for one call of ``llama``."""
        return _OneLookup(self, llama)

    def add(self, messages: list[Any], state: Any) -> None:
        self._states.append((messages, state))

    def matches(self, messages: list[Any]) -> bool:
        return any(m == messages for m, _ in self._states)

    def _best(self, key: Any) -> Any:
        from llama_cpp import Llama

        tokens = list(key)
        scored = [
            (Llama.longest_token_prefix(s.input_ids.tolist(), tokens), s) for _, s in self._states
        ]
        best = max(scored, key=lambda x: x[0], default=(0, None))
        if best[0] == 0:
            raise KeyError("no pinned prefix")
        return best[1]

    def __getitem__(self, key: Any) -> Any:
        return self._best(key)

    def __contains__(self, key: Any) -> bool:
        try:
            self._best(key)
        except KeyError:
            return False
        return True

    def __setitem__(self, key: Any, value: Any) -> None:
        pass  # per-call states are not kept: only the pinned ones are worth their memory


class _OneLookup:
    """The pinned states for one completion: answers llama-cpp-python's lookup before the
    prompt is evaluated, then unsets itself as ``llama.cache``, so that the call does not end
    with ``save_state()`` (a copy of the full state, logits included, that nothing would keep).
    """

    def __init__(self, pins: _PinnedStates, llama: Any):
        self._pins = pins
        self._llama = llama

    def _detach(self) -> None:
        if self._llama.cache is self:
            self._llama.cache = None

    def __getitem__(self, key: Any) -> Any:
        """The pinned state for the prompt ``key``, loaded into the context here when it
        covers more of the prompt than the context holds (so llama-cpp-python, which would load
        it with the logits, finds nothing more to load).

        Where the context holds more of the prompt than the pin (the previous call's prompt
        shared a few more tokens, or was this one), it is cut back to the pin: the rest of the
        prompt is evaluated as one batch after the pin on every call. llama.cpp's numbers
        depend on how tokens are batched, so reusing those few tokens made a near-tie of
        greedy decoding turn on which question came before (kgqa serve answered a question
        one way alone and another way after another question)."""
        from llama_cpp import Llama

        try:
            state = self._pins[key]
            tokens = list(key)
            pinned = Llama.longest_token_prefix(state.input_ids[: state.n_tokens].tolist(), tokens)
            held = Llama.longest_token_prefix(self._llama._input_ids.tolist(), tokens)
            if pinned > held:
                _load_compact(self._llama, state)
            elif held > pinned:
                self._llama.n_tokens = pinned  # llama-cpp-python drops the KV cache after it
            return state
        finally:
            self._detach()

    def __contains__(self, key: Any) -> bool:
        return key in self._pins

    def __setitem__(self, key: Any, value: Any) -> None:
        pass
