"""Test helpers: a parameter tree with one more jurisdiction, made from a copy of another.

Used to show (and to check) that a jurisdiction is data: copy a folder under a new code,
edit a value, and point taxcore at the copy (``load_tree(root)``, or
``TAXCORE_PARAMETERS=root`` with :func:`taxcore.parameters.reset_default_tree`).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

from taxcore.parameters import PACKAGE_ROOT

__all__ = ["tree_with_jurisdiction"]


def tree_with_jurisdiction(
    root: Path, code: str, *, like: str, edits: Mapping[str, tuple[str, str]] | None = None
) -> Path:
    """Write under ``root`` the packaged parameters plus ``code``, a copy of ``like``'s folder.

    ``edits`` maps a parameter file of the copy (``"rates/room_tax.yaml"``) to the text to
    replace in it and its replacement (it must occur). Returns ``root``.
    """
    shutil.copytree(PACKAGE_ROOT, root, ignore=shutil.ignore_patterns("*.py", "__pycache__", "py.typed"))
    shutil.copytree(root / like, root / code)
    for name, (old, new) in (edits or {}).items():
        file = root / code / name
        text = file.read_text(encoding="utf-8")
        if old not in text:
            raise ValueError(f"{old!r} is not in {file}")
        file.write_text(text.replace(old, new), encoding="utf-8")
    return root
