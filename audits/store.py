"""Embedded chunk store of an audit (one SQLite file, stdlib ``sqlite3``).

Every finished chunk of trials is written in one transaction: its arrays (scores, statistics,
accuracies, trial indices; NumPy ``np.save`` bytes, no pickle, zlib-compressed when smaller), its
trial range and seed, and a
line in the compute log. A killed audit therefore leaves only whole chunks, and a rerun reads
them back instead of recomputing them. Every array blob is stored with a SHA-256 bound to its
audit key, phase, chunk, trial range and seed (so a blob copied from another chunk or another
audit fails too), and every chunk with the list of its arrays and a SHA-256 of that binding (so
a deleted array row or a changed trial range is caught); both are checked on every read
(:class:`CorruptChunkError` names the chunk; :meth:`ChunkStore.verify` lists them and
:meth:`ChunkStore.drop` removes them so that they are recomputed, never used). Checksums only
detect damage: a crafted file can carry recomputed ones, so every read is bounded too. A chunk
may hold at most :func:`chunk_byte_limit` bytes decompressed (from the trial count the audit's
plan gives it, checked against its record), each blob's npy header is read first (numpy's
parser, no pickle, no object dtype) and its data inflated a piece at a time, never past what the
header declares and what is left of the limit, and the bytes must be exactly what the header
declares, and a compressed blob may inflate to at most :data:`_MAX_RATIO` times its stored bytes;
:meth:`ChunkStore.put` refuses what a read would refuse. Rows are keyed by
the audit key (a hash of the canonical spec and the code version,
:meth:`audits.spec.AuditSpec.digest`), so results of a different spec or different code in the
same file are never mixed in.

Before anything is written, :func:`inspect_store` reads an existing file read-only (no row, no
``-wal``/``-shm`` file) so that a refused run leaves the folder as it was; :func:`check_folder`
refuses symbolic links where the audit's files go, and :class:`FolderLock` lets one writer at a
time use a folder.

The compute log (:meth:`ChunkStore.compute_counts`) records each time a chunk was computed
and stored; resumption tests use it to show that nothing finished was recomputed.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import sqlite3
import stat
import time
import urllib.parse
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.lib.format as npformat

from audits.folders import check_owned, claim_folder

__all__ = [
    "STORE_NAME",
    "ChunkRecord",
    "SchemaError",
    "ChunkStore",
    "CorruptChunkError",
    "FolderLock",
    "StoreError",
    "StoreState",
    "array_from_bytes",
    "array_to_bytes",
    "check_folder",
    "chunk_byte_limit",
    "count_stored_chunks",
    "delete_store",
    "inspect_store",
]

STORE_NAME = "audit.sqlite"
# 3: checksums bound to the audit key, phase, chunk, trial range and seed; a chunk lists its
# arrays. Files of older schemas are refused (their audit keys belong to older code anyway).
_SCHEMA_VERSION = 3
_SIDE_FILES = ("-wal", "-shm", "-journal")
# sqlite's page cache of the writing connection, in KiB (see ChunkStore.__init__).
_PAGE_CACHE_KIB = 256

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS audits (
    audit_key TEXT PRIMARY KEY,
    spec_json TEXT NOT NULL,
    code_version TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
    audit_key TEXT NOT NULL,
    phase TEXT NOT NULL,
    chunk INTEGER NOT NULL,
    first_trial INTEGER NOT NULL,
    n_trials INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    finished REAL NOT NULL,
    arrays TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    PRIMARY KEY (audit_key, phase, chunk)
);
CREATE TABLE IF NOT EXISTS arrays (
    audit_key TEXT NOT NULL,
    phase TEXT NOT NULL,
    chunk INTEGER NOT NULL,
    name TEXT NOT NULL,
    data BLOB NOT NULL,
    sha256 TEXT NOT NULL,
    PRIMARY KEY (audit_key, phase, chunk, name)
);
CREATE TABLE IF NOT EXISTS compute_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    audit_key TEXT NOT NULL,
    phase TEXT NOT NULL,
    chunk INTEGER NOT NULL,
    seconds REAL NOT NULL,
    worker TEXT NOT NULL,
    finished REAL NOT NULL
);
"""


class StoreError(ValueError):
    """The chunk store cannot be used: unreadable, not a database, locked, another schema."""


class SchemaError(StoreError):
    """The file is a chunk store of another schema version (written by other code)."""


class CorruptChunkError(StoreError):
    """A stored chunk no longer matches the checksums written with it, or is not what an audit
    writes (its checksums may have been recomputed by whoever crafted the file).

    ``bad`` lists ``(phase, chunk, problem)``: ``"array 'NAME'"`` (its bytes, or the chunk they
    are bound to, changed), ``"array 'NAME' missing"``, ``"array 'NAME' not listed"`` or
    ``"chunk record"`` (its trial range, seed or list of arrays changed): checksum failures;
    ``"array 'NAME': WHY"`` (a blob whose npy header or zlib stream the store refuses, or that
    declares more than :func:`chunk_byte_limit` allows) or ``"chunk record: WHY"`` (trials or seed
    other than the audit's plan): refused before anything is inflated.
    """

    def __init__(self, path: Path, bad: list[tuple[str, int, str]]) -> None:
        self.bad = bad
        names = ", ".join(f"{phase}/{chunk} ({problem})" for phase, chunk, problem in bad[:5])
        more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
        if all(": " not in problem for _, _, problem in bad):
            what = "fails its SHA-256 checksum (the file was changed after it was written)"
        else:
            what = ("is refused unread (a damaged or crafted file: its checksums may match, but "
                    "no audit writes such a chunk)")
        super().__init__(f"{path}: stored chunk {names}{more} {what}; rerun with --resume to "
                         "recompute the bad chunks, or --replace to start the folder afresh")


def _binding(audit_key: str, phase: str, chunk: int, first_trial: int, n_trials: int,
             seed: int) -> bytes:
    """What every checksum of a chunk is bound to: a blob is valid only in its own place."""
    return json.dumps([audit_key, phase, int(chunk), int(first_trial), int(n_trials), int(seed)],
                      separators=(",", ":")).encode() + b"\0"


def _blob_digest(binding: bytes, name: str, data: bytes) -> str:
    return hashlib.sha256(binding + name.encode() + b"\0" + data).hexdigest()


def _chunk_digest(binding: bytes, names_json: str) -> str:
    return hashlib.sha256(binding + names_json.encode()).hexdigest()


def _problems(audit_key: str, row: tuple, blobs: Iterable[tuple[str, bytes, str]], *,
              planned: tuple[int, int, int] | None = None, contents: bool = True) -> list[str]:
    """What is wrong with one stored chunk (empty when it is intact).

    ``row``: (phase, chunk, first_trial, n_trials, seed, arrays json, sha256) of ``chunks``;
    ``blobs``: (name, data, sha256) rows of ``arrays``; ``planned``: the (first_trial, n_trials,
    seed) the audit's plan gives the chunk, when known. Checksums first, then the record against
    the plan (so that a crafted trial count cannot raise the chunk's byte limit), then, with
    ``contents``, every blob's npy header and decompressed size within the chunk's limit,
    inflated a piece at a time and never held whole.
    """
    phase, chunk, first, n, seed, names_json, digest = row
    blobs = list(blobs)
    binding = _binding(audit_key, phase, chunk, first, n, seed)
    problems = []
    try:
        listed = json.loads(names_json)
        ok = isinstance(listed, list) and all(isinstance(x, str) for x in listed)
    except ValueError:
        ok = False
    if not ok or _chunk_digest(binding, names_json) != digest:
        return ["chunk record"]
    found = set()
    for name, data, blob_digest in blobs:
        found.add(name)
        if name not in listed:
            problems.append(f"array {name!r} not listed")
        elif _blob_digest(binding, name, data) != blob_digest:
            problems.append(f"array {name!r}")
    problems += [f"array {name!r} missing" for name in listed if name not in found]
    if problems:
        return problems
    if planned is not None and (first, n, seed) != tuple(planned):
        p_first, p_n, p_seed = planned
        return [f"chunk record: trials {first}..{first + n - 1} with seed {seed}, where the audit "
                f"plans trials {p_first}..{p_first + p_n - 1} with seed {p_seed}"]
    if contents:
        left = chunk_byte_limit(n)
        for name, data, _ in blobs:
            try:
                left -= _checked_size(data, limit=left)
            except _BlobError as error:
                return [f"array {name!r}: {error}"]
    return problems


def array_to_bytes(array: np.ndarray) -> bytes:
    """``np.save`` bytes of an array (no pickle, dtype and shape kept exactly)."""
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(array), allow_pickle=False)
    return buffer.getvalue()


def array_from_bytes(data: bytes) -> np.ndarray:
    """An array stored by the chunk store, read back from its ``np.save`` bytes (header checked
    first: no object dtype, and exactly as many bytes as the header declares)."""
    try:
        return _array(b"".join(_npy_pieces(data, limit=len(data))))
    except _BlobError as error:
        raise ValueError(f"not an array as the chunk store writes it: {error}") from None


_NPY_MAGIC = b"\x93NUMPY"

# Ceilings on what one stored chunk may hold once decompressed (all its arrays together, npy
# headers included), checked against each blob's npy header before its data is inflated: the
# SHA-256 checksums only detect damage, and a crafted file with recomputed checksums passes them.
# What one trial may add: the most a built-in adapter stores per trial is two parameter vectors
# of 5,000 float64 (the network adapters keep their statistics up to 5,000 parameters; the
# linear models stop at CIFAR-10's 3,072 features and a bias), 80,000 bytes, plus a few scores, two
# accuracies and the trial index, 8 bytes each: about 80,100 bytes. 1 MiB is 13 times that, and
# leaves room for 65,536 float64 per trial and side from a mechanism of one's own.
_TRIAL_BYTES = 1 << 20
# One exact column sum, stored per chunk as hex text (audits.chunks, arrays named
# ``side.column_sums.stat``): an integer in units of 2^-1074 of a sum of at most 10^7 float64
# (the spec's trial limit), below 10^7 * 2^1024 * 2^1074 < 2^2122, hence at most 531 hex digits
# and a sign.
_SUM_BYTES = 532
# What a chunk may hold besides its trials' rows: the column sums of every float64 a trial's
# _TRIAL_BYTES can hold (131,072 columns, 70 MB; the largest built-in pilot chunk stores
# 2 x 5,000 columns, 5.3 MB) and the npy headers (128 bytes each as np.save writes the store's arrays).
_CHUNK_BYTES = (_TRIAL_BYTES // 8) * _SUM_BYTES
# Most a compressed blob may inflate to, as a multiple of its stored bytes. The per-chunk limit
# alone would let a chunk of 2,500 trials inflate to 2.7 GB; with this, a crafted blob inflates
# to at most 64 times the bytes it takes in the file. zlib reaches about 1000:1 on constant
# data, while the store's arrays compress 1 to 20 times (parameter vectors and scores hardly,
# trial indices about 5, accuracies about 8, padded column sums about 20); an array that would
# compress more (all accuracies equal) is stored as plain npy bytes instead (:func:`_pack`).
_MAX_RATIO = 64
# Longest npy header text read (np.save writes 118 characters for the store's arrays; numpy's
# own reader refuses above 10,000), and what is inflated to find it.
_HEADER_TEXT = 4096
_HEADER_PREFIX = _HEADER_TEXT + 16
# Pieces in which a blob is inflated, so that checking one never holds it whole.
_PIECE = 1 << 20


def chunk_byte_limit(n_trials: int) -> int:
    """The most bytes a chunk of ``n_trials`` trials may hold, decompressed (see
    :data:`_TRIAL_BYTES` and :data:`_CHUNK_BYTES`): what :meth:`ChunkStore.put` refuses to write
    and every read refuses to inflate."""
    return max(int(n_trials), 0) * _TRIAL_BYTES + _CHUNK_BYTES


class _BlobError(ValueError):
    """A blob that is not an array as the store writes it, or declares more than it may hold."""


def _header(prefix: bytes) -> tuple[int, int]:
    """(header length, declared data bytes) of the npy bytes starting with ``prefix``, read with
    numpy's own header parser (a literal, never pickle); object dtypes are refused."""
    fp = io.BytesIO(prefix)
    try:
        version = npformat.read_magic(fp)
        if version == (1, 0):
            shape, _, dtype = npformat.read_array_header_1_0(fp, max_header_size=_HEADER_TEXT)
        elif version == (2, 0):
            shape, _, dtype = npformat.read_array_header_2_0(fp, max_header_size=_HEADER_TEXT)
        else:
            raise _BlobError(f"npy format version {version[0]}.{version[1]}, not 1.0 or 2.0")
    except _BlobError:
        raise
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError, OverflowError):
        raise _BlobError("no readable npy header") from None
    if dtype.hasobject:
        raise _BlobError(f"dtype {dtype} holds Python objects")
    if any(x < 0 for x in shape) or (dtype.itemsize == 0 and math.prod(shape) > 0):
        raise _BlobError(f"shape {shape} of dtype {dtype} is not an array np.save writes")
    return fp.tell(), math.prod(shape) * dtype.itemsize


def _npy_pieces(data: bytes, *, limit: int) -> Iterator[bytes]:
    """The npy bytes of a stored blob (plain, or one zlib stream), in pieces of at most
    :data:`_PIECE` bytes after the header; raises :class:`_BlobError` before inflating more
    than ``limit`` bytes or :data:`_MAX_RATIO` times the blob, or when the bytes are not exactly
    what the header declares."""
    if data.startswith(_NPY_MAGIC):
        length, body = _header(data[:_HEADER_PREFIX])
        if length + body > limit:
            raise _BlobError(f"its header declares {length + body:,} bytes, more than the "
                             f"{limit:,} left for its chunk")
        if len(data) != length + body:
            raise _BlobError(f"its header declares {length + body:,} bytes, it holds "
                             f"{len(data):,}")
        yield data
        return
    inflate = zlib.decompressobj()
    try:
        prefix = inflate.decompress(data, _HEADER_PREFIX)
        if not prefix.startswith(_NPY_MAGIC):
            raise _BlobError("neither npy bytes nor a zlib stream of them")
        length, body = _header(prefix)
        size = length + body
        if size > limit:
            raise _BlobError(f"its header declares {size:,} bytes, more than the {limit:,} left "
                             "for its chunk")
        if size > _MAX_RATIO * len(data):
            raise _BlobError(f"its header declares {size:,} bytes, more than {_MAX_RATIO} times "
                             f"its {len(data):,} compressed bytes (the most the store compresses)")
        if len(prefix) > size:
            raise _BlobError(f"it inflates past the {size:,} bytes its header declares")
        yield prefix
        done = len(prefix)
        while done < size:
            piece = inflate.decompress(inflate.unconsumed_tail, min(_PIECE, size - done))
            if not piece:
                raise _BlobError(f"its zlib stream ends after {done:,} of the {size:,} bytes its "
                                 "header declares")
            done += len(piece)
            yield piece
        if inflate.decompress(inflate.unconsumed_tail, 1):
            raise _BlobError(f"it inflates past the {size:,} bytes its header declares")
        if not inflate.eof or inflate.unused_data:
            raise _BlobError("its zlib stream is truncated or followed by other bytes")
    except zlib.error as error:
        raise _BlobError(f"its zlib stream is damaged ({error})") from None


def _array(npy: bytes) -> np.ndarray:
    return np.load(io.BytesIO(npy), allow_pickle=False)


def _checked_size(data: bytes, *, limit: int) -> int:
    """Decompressed size of a blob, checked as a read checks it but holding one piece at a time."""
    return sum(len(piece) for piece in _npy_pieces(data, limit=limit))


def _pack(array: np.ndarray) -> tuple[bytes, int]:
    """A blob as stored and its ``np.save`` size: the ``np.save`` bytes, zlib-compressed when that
    is smaller but at most :data:`_MAX_RATIO` times so (lossless: accuracies, trial indices and
    scores shrink, the values read back are the same bits)."""
    raw = array_to_bytes(array)
    packed = zlib.compress(raw, 6)
    return (packed if len(packed) < len(raw) <= _MAX_RATIO * len(packed) else raw), len(raw)


@dataclass(frozen=True)
class ChunkRecord:
    """One stored chunk: trials ``first_trial .. first_trial + n_trials - 1`` of a phase."""

    phase: str
    chunk: int
    first_trial: int
    n_trials: int
    seed: int
    arrays: Mapping[str, np.ndarray]


class ChunkStore:
    """The SQLite store of one audit directory (``audit.sqlite``), for one audit key.

    Use as a context manager or call :meth:`close`. Only the process that runs the audit
    writes; readers (progress monitors, tests) may open the file at the same time (WAL mode).
    """

    def __init__(self, path: str | Path, *, audit_key: str, spec_json: str,
                 code_version: str, timeout: float = 60.0) -> None:
        self.path = Path(path)
        check_folder(self.path.parent, names=())
        try:
            claim_folder(self.path.parent)
        except OSError as error:
            raise StoreError(f"cannot create the output folder {self.path.parent}: "
                             f"{error.strerror or error}") from None
        self.audit_key = audit_key
        self.spec_json = spec_json
        try:
            self._conn = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
        except sqlite3.Error as error:
            raise StoreError(f"cannot open the chunk store {self.path}: {error}") from None
        try:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            # A chunk is written once and read back once, so sqlite's page cache (2 MB by
            # default) would only hold pages never read again while the trials compute.
            self._conn.execute(f"PRAGMA cache_size=-{_PAGE_CACHE_KIB}")
            self._initialise(spec_json, code_version)
        except sqlite3.Error as error:
            self._conn.close()
            raise StoreError(f"cannot use the chunk store {self.path}: {error} (a corrupted or "
                             "locked file, or not a chunk store; use another --out folder or "
                             "--replace)") from None
        except BaseException:
            self._conn.close()
            raise

    def _initialise(self, spec_json: str, code_version: str) -> None:
        self._conn.executescript(_SCHEMA)
        with self._transaction():
            row = self._conn.execute("SELECT value FROM meta WHERE key = 'schema_version'")
            found = row.fetchone()
            if found is None:
                self._conn.execute("INSERT INTO meta VALUES ('schema_version', ?)",
                                   (str(_SCHEMA_VERSION),))
            elif int(found[0]) != _SCHEMA_VERSION:
                raise StoreError(f"{self.path} has chunk-store schema {found[0]}; this code reads "
                                 f"version {_SCHEMA_VERSION} (use another output directory)")
            self._conn.execute(
                "INSERT OR IGNORE INTO audits VALUES (?, ?, ?, ?)",
                (self.audit_key, spec_json, code_version, time.time()),
            )

    # -- plumbing ----------------------------------------------------------------------------

    def _transaction(self):
        conn = self._conn

        class _Tx:
            def __enter__(self_inner):
                conn.execute("BEGIN IMMEDIATE")

            def __exit__(self_inner, exc_type, exc, tb):
                conn.execute("COMMIT" if exc_type is None else "ROLLBACK")
                return False

        return _Tx()

    def close(self) -> None:
        """Close the store's database connection."""
        self._conn.close()

    def __enter__(self) -> ChunkStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing -----------------------------------------------------------------------------

    def put(self, *, phase: str, chunk: int, first_trial: int, n_trials: int, seed: int,
            arrays: Mapping[str, np.ndarray], seconds: float = 0.0,
            worker: str | None = None, per_chunk: Iterable[str] = ()) -> None:
        """Store one finished chunk and log its computation (one transaction).

        Every array has one row per trial, except those named in ``per_chunk`` (summaries of
        the chunk, such as exact column sums)."""
        per_chunk = set(per_chunk)
        for name, array in arrays.items():
            if name not in per_chunk and np.asarray(array).shape[:1] != (n_trials,):
                raise ValueError(f"array {name!r} of chunk {phase}/{chunk} has leading size "
                                 f"{np.asarray(array).shape[:1]}, expected ({n_trials},)")
        now = time.time()
        worker = worker or f"pid {os.getpid()}"
        binding = _binding(self.audit_key, phase, chunk, first_trial, n_trials, seed)
        packed = [(name, *_pack(array)) for name, array in sorted(arrays.items())]
        size = sum(raw for _, _, raw in packed)
        if size > chunk_byte_limit(n_trials):
            raise StoreError(
                f"chunk {phase}/{chunk} holds {size:,} bytes, more than the "
                f"{chunk_byte_limit(n_trials):,} the chunk store keeps for {n_trials} trials "
                f"({_TRIAL_BYTES:,} per trial and {_CHUNK_BYTES:,} per chunk): store fewer or "
                "smaller statistics per trial")
        blobs = [(name, data) for name, data, _ in packed]
        names_json = json.dumps([name for name, _ in blobs], separators=(",", ":"))
        with self._transaction():
            if self._has(phase, chunk):
                raise ValueError(f"chunk {phase}/{chunk} is already stored")
            # array rows left without their chunk row (a damaged file) must not block the chunk
            self._conn.execute("DELETE FROM arrays WHERE audit_key = ? AND phase = ? AND chunk = ?",
                               (self.audit_key, phase, chunk))
            self._conn.execute(
                "INSERT INTO chunks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (self.audit_key, phase, chunk, first_trial, n_trials, seed, now, names_json,
                 _chunk_digest(binding, names_json)),
            )
            self._conn.executemany(
                "INSERT INTO arrays VALUES (?, ?, ?, ?, ?, ?)",
                [(self.audit_key, phase, chunk, name, data, _blob_digest(binding, name, data))
                 for name, data in blobs],
            )
            self._conn.execute(
                "INSERT INTO compute_log (audit_key, phase, chunk, seconds, worker, finished) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (self.audit_key, phase, chunk, float(seconds), worker, now),
            )

    # -- reading -----------------------------------------------------------------------------

    def _has(self, phase: str, chunk: int) -> bool:
        row = self._conn.execute(
            "SELECT 1 FROM chunks WHERE audit_key = ? AND phase = ? AND chunk = ?",
            (self.audit_key, phase, chunk),
        ).fetchone()
        return row is not None

    def finished(self, phase: str | None = None) -> set[tuple[str, int]]:
        """(phase, chunk) pairs already stored for this audit key."""
        query = "SELECT phase, chunk FROM chunks WHERE audit_key = ?"
        args: tuple = (self.audit_key,)
        if phase is not None:
            query += " AND phase = ?"
            args += (phase,)
        return {(p, int(c)) for p, c in self._conn.execute(query, args)}

    def get(self, phase: str, chunk: int, *,
            planned: tuple[int, int, int] | None = None) -> ChunkRecord:
        """The stored chunk (checksums verified first, then its record against ``planned``, the
        (first_trial, n_trials, seed) the audit's plan gives it, when given; every blob is
        checked against its npy header and :func:`chunk_byte_limit` while it is inflated);
        KeyError when it is not stored, :class:`CorruptChunkError` when it fails a check."""
        row = self._conn.execute(
            "SELECT phase, chunk, first_trial, n_trials, seed, arrays, sha256 FROM chunks "
            "WHERE audit_key = ? AND phase = ? AND chunk = ?",
            (self.audit_key, phase, chunk),
        ).fetchone()
        if row is None:
            raise KeyError(f"chunk {phase}/{chunk} is not stored")
        rows = self._conn.execute(
            "SELECT name, data, sha256 FROM arrays WHERE audit_key = ? AND phase = ? AND chunk = ? "
            "ORDER BY name",
            (self.audit_key, phase, chunk),
        ).fetchall()
        # Checked before any byte is parsed: a changed, moved or missing blob is never used.
        problems = _problems(self.audit_key, row, rows, planned=planned, contents=False)
        if problems:
            raise CorruptChunkError(self.path, [(phase, chunk, p) for p in problems])
        arrays, left = {}, chunk_byte_limit(row[3])
        for name, data, _ in rows:
            try:
                npy = b"".join(_npy_pieces(data, limit=left))
            except _BlobError as error:
                raise CorruptChunkError(self.path, [(phase, chunk, f"array {name!r}: {error}")]
                                        ) from None
            left -= len(npy)
            arrays[name] = _array(npy)
            del npy
        return ChunkRecord(phase, chunk, int(row[2]), int(row[3]), int(row[4]), arrays)

    def records(self, phase: str) -> Iterator[ChunkRecord]:
        """Stored chunks of a phase in chunk order."""
        chunks = sorted(c for p, c in self.finished(phase))
        for chunk in chunks:
            yield self.get(phase, chunk)

    def verify(self, planned: Mapping[tuple[str, int], tuple[int, int, int]] | None = None
               ) -> list[tuple[str, int, str]]:
        """(phase, chunk, problem) of every stored chunk of this audit that fails its checksums
        or the checks of its contents, and, with ``planned`` ((phase, chunk) -> (first_trial,
        n_trials, seed)), whose record differs from the plan (see :class:`CorruptChunkError`)."""
        return _verify(self._conn, self.audit_key, planned)

    def drop(self, chunks: set[tuple[str, int]]) -> None:
        """Remove chunks (e.g. those failing :meth:`verify`) so that they are computed again."""
        with self._transaction():
            for phase, chunk in sorted(chunks):
                for table in ("chunks", "arrays"):
                    self._conn.execute(
                        f"DELETE FROM {table} WHERE audit_key = ? AND phase = ? AND chunk = ?",
                        (self.audit_key, phase, chunk))

    def other_specs(self) -> list[str]:
        """Keys of audits in this file whose spec differs from this one's and that computed
        something (same spec under other code versions is not "other": the key already keeps
        their chunks apart; an audit refused before computing anything leaves nothing to lose)."""
        rows = self._conn.execute(
            "SELECT audit_key FROM audits WHERE audit_key != ? AND spec_json != ? "
            "AND audit_key IN (SELECT audit_key FROM compute_log) ORDER BY created",
            (self.audit_key, self.spec_json),
        )
        return [k for (k,) in rows]

    def drop_other_audits(self) -> None:
        """Delete every audit but this one (``--replace``)."""
        with self._transaction():
            for table in ("chunks", "arrays", "compute_log", "audits"):
                self._conn.execute(f"DELETE FROM {table} WHERE audit_key != ?", (self.audit_key,))

    def compute_counts(self) -> dict[tuple[str, int], int]:
        """How many times each chunk of this audit was computed and stored."""
        rows = self._conn.execute(
            "SELECT phase, chunk, COUNT(*) FROM compute_log WHERE audit_key = ? "
            "GROUP BY phase, chunk",
            (self.audit_key,),
        )
        return {(p, int(c)): int(n) for p, c, n in rows}

    def audit_keys(self) -> list[str]:
        """The audit keys recorded in this store, oldest first."""
        return [k for (k,) in self._conn.execute("SELECT audit_key FROM audits ORDER BY created")]


def _verify(conn: sqlite3.Connection, audit_key: str,
            planned: Mapping[tuple[str, int], tuple[int, int, int]] | None = None
            ) -> list[tuple[str, int, str]]:
    rows = conn.execute(
        "SELECT phase, chunk, first_trial, n_trials, seed, arrays, sha256 FROM chunks "
        "WHERE audit_key = ? ORDER BY phase, chunk", (audit_key,)).fetchall()
    bad = []
    for row in rows:
        blobs = conn.execute(
            "SELECT name, data, sha256 FROM arrays WHERE audit_key = ? AND phase = ? AND chunk = ? "
            "ORDER BY name", (audit_key, row[0], row[1]))
        plan = None if planned is None else planned.get((row[0], int(row[1])))
        # a chunk outside the plan is never read, so its blobs are not inflated either
        contents = planned is None or plan is not None
        bad += [(row[0], int(row[1]), problem)
                for problem in _problems(audit_key, row, blobs, planned=plan, contents=contents)]
    return bad


@dataclass(frozen=True)
class StoreState:
    """What :func:`inspect_store` found: audits of other specs that computed something, and
    damaged chunks of this audit (as in :class:`CorruptChunkError`)."""

    other_specs: tuple[str, ...]
    bad: tuple[tuple[str, int, str], ...]


def inspect_store(path: str | Path, *, audit_key: str, spec_json: str,
                  planned: Mapping[tuple[str, int], tuple[int, int, int]] | None = None
                  ) -> StoreState | None:
    """Look at an existing chunk store without writing anything; None when there is none.

    Every chunk of ``audit_key`` is checked as :meth:`ChunkStore.verify` checks it (against
    ``planned`` when given).

    A file closed cleanly (no ``-wal`` beside it) is opened immutable, so SQLite creates no
    ``-wal``/``-shm`` file; one left by a killed run is read as it is. Raises
    :class:`StoreError` for a file that is not a chunk store of this schema.
    """
    path = Path(path)
    if not os.path.lexists(path):
        return None
    immutable = not os.path.lexists(f"{path}-wal")
    uri = f"file:{urllib.parse.quote(str(path.absolute()))}?mode=ro" + (
        "&immutable=1" if immutable else "")
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=10.0)
    except sqlite3.Error as error:
        raise StoreError(f"cannot open the chunk store {path}: {error}") from None
    try:
        tables = {name for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables:
            return StoreState((), ())  # an empty file: nothing stored, nothing to lose
        if "meta" not in tables:
            raise StoreError(f"{path} is not a chunk store (use another --out folder)")
        found = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if found is None or found[0] != str(_SCHEMA_VERSION):
            version = "no version" if found is None else f"schema {found[0]}"
            raise SchemaError(f"{path} has chunk-store {version}; this code reads version "
                              f"{_SCHEMA_VERSION} (use another output folder, or --replace to "
                              "delete it)")
        other = conn.execute(
            "SELECT audit_key FROM audits WHERE audit_key != ? AND spec_json != ? "
            "AND audit_key IN (SELECT audit_key FROM compute_log) ORDER BY created",
            (audit_key, spec_json)).fetchall()
        return StoreState(tuple(k for (k,) in other), tuple(_verify(conn, audit_key, planned)))
    except sqlite3.Error as error:
        raise StoreError(f"cannot read the chunk store {path}: {error} (a corrupted file, or not "
                         "a chunk store; use another --out folder or --replace)") from None
    finally:
        conn.close()


def delete_store(path: str | Path) -> None:
    """Delete a chunk store and its SQLite side files (``--replace`` of a store of another
    schema); :func:`check_folder` has refused links, so only the folder's own files go."""
    path = Path(path)
    check_folder(path.parent, names=())
    for name in (path, *(Path(f"{path}{side}") for side in _SIDE_FILES)):
        name.unlink(missing_ok=True)


def check_folder(folder: str | Path, *, names: Iterable[str]) -> None:
    """Refuse an output folder where the audit's files (the store, its SQLite side files and
    ``names``) would be symbolic links (dangling or not) or anything but regular files: the
    audit would write, or ``--replace`` delete, somewhere else; and a folder holding files the
    toolkit did not write (:func:`audits.folders.check_owned`)."""
    folder = Path(folder)
    if os.path.lexists(folder) and not folder.is_dir():
        raise StoreError(f"the output folder {folder} exists and is not a folder")
    for name in (STORE_NAME, *(STORE_NAME + side for side in _SIDE_FILES), *names):
        path = folder / name
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            continue
        except NotADirectoryError as error:  # a component of the folder's path is a file
            raise StoreError(f"cannot create the output folder {folder}: "
                             f"{error.strerror or error}") from None
        except OSError as error:
            raise StoreError(f"cannot inspect {path}: {error.strerror or error}") from None
        if stat.S_ISLNK(mode):
            raise StoreError(f"{path} is a symbolic link; an audit folder's files must be its "
                             "own (remove the link or choose another --out folder)")
        if not stat.S_ISREG(mode):
            raise StoreError(f"{path} is not a regular file (remove it or choose another "
                             "--out folder)")
    check_owned(folder)  # after the links: a link is named as one, whoever made it


class FolderLock:
    """One writer per output folder: an exclusive, non-blocking ``flock`` on the folder itself
    (nothing is written for it), held until :meth:`release` or the end of the ``with`` block.
    A second audit of the same folder, in this process or another, is refused at once."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self._fd: int | None = None

    def acquire(self) -> FolderLock:
        """Take the folder's exclusive lock without waiting; refuse (StoreError) when another
        audit holds it."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover - no flock on this platform: no lock to take
            return self
        check_folder(self.folder, names=())
        try:
            claim_folder(self.folder)
            fd = os.open(self.folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError as error:
            raise StoreError(f"cannot use the output folder {self.folder}: "
                             f"{error.strerror or error}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise StoreError(f"{self.folder} is in use by another audit running now; wait for "
                             "it to finish or choose another --out folder") from None
        self._fd = fd
        return self

    def release(self) -> None:
        """Give the lock back (closing the descriptor releases the flock)."""
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None

    def __enter__(self) -> FolderLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def count_stored_chunks(path: str | Path) -> int:
    """Chunks stored in an audit file, all keys (0 if the file or table does not exist yet).

    Opens the file read-only, so a monitor never creates or locks it.
    """
    path = Path(path)
    if not path.exists():
        return 0
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10.0)
        try:
            return int(conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return 0
