"""Output folders the toolkit may write: ones it created, or ones holding its own marker.

An audit or a reproduction writes fixed file names (``report.json``, ``report.html``,
``audit.sqlite``, ...). A folder the user chose with ``--out`` may already hold files of those
names that are the user's own, so the toolkit writes only into

* a folder that does not exist yet or is empty (it creates the folder and its marker), or
* a folder holding the marker :data:`MARKER_NAME` of the same kind (``audit`` or
  ``reproduction``), which only the toolkit writes, on first use of a folder.

Anything else is refused in one line naming a file the folder holds; nothing is written, and
``--replace`` does not lift the refusal (it replaces only the toolkit's own audits).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

__all__ = ["MARKER_NAME", "ForeignFolderError", "check_owned", "claim_folder"]

MARKER_NAME = ".unlearn-verify"
_WRITER = "unlearn-verify"
_KINDS = ("audit", "reproduction")
# Names the toolkit writes in an audit folder: named first when a foreign folder holds one,
# since that is the file a write would have replaced.
_WRITTEN = ("report.html", "report.json", "audit.sqlite")


class ForeignFolderError(ValueError):
    """An output folder that holds files the toolkit did not write (no marker of its kind)."""


def _marker_kind(folder: Path) -> str | None:
    """The kind recorded in ``folder``'s marker; None without a readable marker of this toolkit
    (a link or anything but a small regular file is no marker)."""
    path = folder / MARKER_NAME
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > 4096:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("written_by") != _WRITER:
        return None
    kind = data.get("kind")
    return kind if kind in _KINDS else None


def _refusal(folder: Path, entries: list[str], *, kind: str, found: str | None) -> str:
    if found is not None and found != kind:
        return (f"{folder} holds a {found}'s files (its {MARKER_NAME} marker), not an {kind}'s; "
                "choose another --out folder")
    named = next((name for name in _WRITTEN if name in entries), sorted(entries)[0])
    return (f"{folder / named}: {folder} is not marked as this toolkit's output folder (no "
            f"{MARKER_NAME} file), so nothing in it is overwritten; choose a new or empty --out "
            "folder")


def check_owned(folder: str | Path, *, kind: str = "audit") -> None:
    """Refuse (:class:`ForeignFolderError`) a ``folder`` the toolkit may not write: one that
    exists, is not empty, and holds no marker of ``kind``. Writes nothing."""
    if kind not in _KINDS:
        raise ValueError(f"folder kind {kind!r}: one of {', '.join(_KINDS)}")
    folder = Path(folder)
    try:
        entries = os.listdir(folder)
    except FileNotFoundError:
        return
    except NotADirectoryError:
        raise ForeignFolderError(f"the output folder {folder} exists and is not a folder") from None
    except OSError as error:
        raise ForeignFolderError(f"cannot read the output folder {folder}: "
                                 f"{error.strerror or error}") from None
    if not entries:
        return
    found = _marker_kind(folder)
    if found != kind:
        raise ForeignFolderError(_refusal(folder, entries, kind=kind, found=found))


def claim_folder(folder: str | Path, *, kind: str = "audit") -> Path:
    """Create ``folder`` (and its parents) when missing and write its marker when it has none,
    after :func:`check_owned` accepted it; returns the folder."""
    check_owned(folder, kind=kind)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    marker = folder / MARKER_NAME
    if not os.path.lexists(marker):
        # exclusive create: a link or file appearing meanwhile is never written through
        try:
            fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            check_owned(folder, kind=kind)
            return folder
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"written_by": _WRITER, "kind": kind}, handle)
            handle.write("\n")
    return folder
