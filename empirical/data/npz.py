"""Reading untrusted ``.npz`` files (``numpy.savez``): every array's declared size checked first.

``numpy.load`` inflates an array before anything can be said about its size, so a small file
that declares a huge array (a zip bomb) costs seconds and gigabytes before it is refused, and a
file that is not a zip at all is reported as "pickled data ... allow_pickle". Here, before any
array data is read:

* the path must exist and be a regular file (links are followed; a device or folder is no
  file), and a zip archive ("not found", "not a zip/npz file" otherwise, never advice to allow
  pickles: nothing is ever unpickled);
* each requested array's npy header is read from its zip entry (numpy's header parser, a
  literal, no pickle): its dtype may not hold Python objects, its shape and dtype give the bytes
  it declares, which must be exactly what the zip entry says it holds, at most ``max_bytes`` for
  all requested arrays together, and for a compressed entry at most :data:`MAX_RATIO` times its
  compressed bytes (real data compresses far less; a zip bomb far more);

and then each array is read with exactly the bytes its header declares. Every refusal is a
:class:`ValueError` naming the file and the array.
"""

from __future__ import annotations

import math
import stat
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.lib.format as npformat

__all__ = ["MAX_BYTES", "MAX_RATIO", "NpzArray", "npz_arrays", "read_npz"]

# All requested arrays of one file together, as declared by their headers (16 GiB: CIFAR-10's
# pixels as float64 take 1.5 GB); what the machine can hold is the user's to judge below that.
MAX_BYTES = 16 << 30
# Most a compressed entry may inflate to, as a multiple of its compressed bytes. numpy's
# savez_compressed shrinks image pixels and features 1 to 10 times; zlib reaches about 1000:1
# on constant data, which is what a zip bomb is made of. Entries of at most _SMALL bytes are
# exempt (a constant array of a few thousand values compresses past any ratio harmlessly).
MAX_RATIO = 100
_SMALL = 1 << 20
_HEADER_TEXT = 10_000  # numpy's own ceiling on the header text


@dataclass(frozen=True)
class NpzArray:
    """One array entry of a checked ``.npz``: its name, shape, dtype and declared bytes."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    nbytes: int
    info: zipfile.ZipInfo = field(repr=False, compare=False)


def _size(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB" if n >= 2**20 else f"{n:,} bytes"


def _open(path: Path) -> zipfile.ZipFile:
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise ValueError(f"{path}: not found") from None
    except OSError as error:
        raise ValueError(f"{path}: cannot be read ({error.strerror or error})") from None
    if stat.S_ISDIR(mode):
        raise ValueError(f"{path} is a folder, not a .npz file")
    if not stat.S_ISREG(mode):
        raise ValueError(f"{path} is not a regular file, so not a .npz file")
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, EOFError, ValueError, NotImplementedError):
        raise ValueError(f"{path} is not a zip/npz file (numpy.savez writes one)") from None
    except OSError as error:
        raise ValueError(f"{path}: cannot be read ({error.strerror or error})") from None


def _entry(archive: zipfile.ZipFile, path: Path, name: str, info: zipfile.ZipInfo) -> NpzArray:
    where = f"{path}: array {name!r}"
    # the zip directory's sizes are the file's own claims: a compressed size beyond the file's
    # length would let a bomb pass the ratio check, a stored size beyond it is a lie outright
    file_bytes = path.stat().st_size
    if info.compress_size > file_bytes or (info.compress_type == zipfile.ZIP_STORED
                                           and info.file_size > file_bytes):
        raise ValueError(f"{where}: its zip entry claims more bytes than the file's "
                         f"{_size(file_bytes)}")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise ValueError(f"{where} is compressed with zip method {info.compress_type}; "
                         "numpy.savez writes stored or deflated entries only")
    try:
        with archive.open(info) as stream:
            version = npformat.read_magic(stream)
            if version == (1, 0):
                shape, _, dtype = npformat.read_array_header_1_0(stream, max_header_size=_HEADER_TEXT)
            elif version == (2, 0):
                shape, _, dtype = npformat.read_array_header_2_0(stream, max_header_size=_HEADER_TEXT)
            else:
                raise ValueError(f"npy format version {version[0]}.{version[1]}")
            header = stream.tell()
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError, OverflowError,
            EOFError, OSError, zipfile.BadZipFile, NotImplementedError) as error:
        raise ValueError(f"{where} has no readable npy header ({error})") from None
    if dtype.hasobject:
        raise ValueError(f"{where} has dtype {dtype}, which holds Python objects (refused: "
                         "reading it would unpickle them)")
    if any(x < 0 for x in shape):
        raise ValueError(f"{where} declares the negative shape {shape}")
    nbytes = math.prod(shape) * dtype.itemsize
    if info.file_size != header + nbytes:
        raise ValueError(f"{where} declares shape {shape} of {dtype} ({_size(header + nbytes)} "
                         f"with its header), but its zip entry holds {_size(info.file_size)}")
    if (info.compress_type == zipfile.ZIP_DEFLATED and info.file_size > _SMALL
            and info.file_size > MAX_RATIO * info.compress_size):
        raise ValueError(f"{where} declares shape {shape} of {dtype} ({_size(nbytes)}), more than "
                         f"{MAX_RATIO} times its {_size(info.compress_size)} compressed (a zip "
                         "bomb?); refused before inflating it. Real data saved with "
                         "numpy.savez (uncompressed) is read whatever its size")
    return NpzArray(name, tuple(int(x) for x in shape), dtype, nbytes, info)


def npz_arrays(path: str | Path) -> dict[str, NpzArray]:
    """The arrays of the ``.npz`` at ``path``, each header checked, none of their data read."""
    path = Path(path)
    with _open(path) as archive:
        return _entries(archive, path, None)


def _entries(archive: zipfile.ZipFile, path: Path, names: Iterable[str] | None
             ) -> dict[str, NpzArray]:
    members = {info.filename[:-4]: info for info in archive.infolist()
               if info.filename.endswith(".npy")}
    if not members:
        raise ValueError(f"{path} is a zip file without .npy arrays, not a .npz file")
    wanted = list(members) if names is None else list(names)
    return {name: _entry(archive, path, name, members[name]) for name in wanted
            if name in members}


def read_npz(path: str | Path, names: Iterable[str] | None = None, *,
             max_bytes: int = MAX_BYTES) -> dict[str, np.ndarray]:
    """The arrays ``names`` (all when None; absent names are left out, for the caller to name)
    of the ``.npz`` at ``path``, each checked as the module says before any data is read."""
    path = Path(path)
    with _open(path) as archive:
        entries = _entries(archive, path, names)
        total = sum(e.nbytes for e in entries.values())
        if total > max_bytes:
            largest = max(entries.values(), key=lambda e: e.nbytes)
            raise ValueError(f"{path}: its arrays declare {_size(total)} together, more than the "
                             f"{_size(max_bytes)} this reader accepts (the largest, array "
                             f"{largest.name!r}, shape {largest.shape} of {largest.dtype})")
        out = {}
        for name, entry in entries.items():
            try:
                with archive.open(entry.info) as stream:
                    out[name] = npformat.read_array(stream, allow_pickle=False,
                                                    max_header_size=_HEADER_TEXT)
            except (ValueError, OSError, EOFError, zipfile.BadZipFile) as error:
                raise ValueError(f"{path}: array {name!r} cannot be read ({error})") from None
        return out
