"""Embedded chunk store of an audit (one SQLite file, stdlib ``sqlite3``).

Every finished chunk of trials is written in one transaction: its arrays (scores, statistics,
accuracies, trial indices; NumPy ``np.save`` bytes, no pickle), its trial range and seed, and a
line in the compute log. A killed audit therefore leaves only whole chunks, and a rerun reads
them back instead of recomputing them. Every array blob is stored with its SHA-256 and checked on
every read (:class:`CorruptChunkError` names a chunk whose bytes changed; :meth:`ChunkStore.verify`
lists them and :meth:`ChunkStore.drop` removes them so that they are recomputed, never used).
Rows are keyed by the audit key (a hash of the
canonical spec and the code version, :meth:`audits.spec.AuditSpec.digest`), so results of a
different spec or different code in the same file are never mixed in.

The compute log (:meth:`ChunkStore.compute_counts`) records each time a chunk was computed
and stored; resumption tests use it to show that nothing finished was recomputed.
"""

from __future__ import annotations

import hashlib
import io
import os
import sqlite3
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = [
    "STORE_NAME",
    "ChunkRecord",
    "ChunkStore",
    "CorruptChunkError",
    "StoreError",
    "array_from_bytes",
    "array_to_bytes",
    "count_stored_chunks",
]

STORE_NAME = "audit.sqlite"
_SCHEMA_VERSION = 2  # 2: a SHA-256 per array blob

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


class CorruptChunkError(StoreError):
    """A stored chunk's bytes no longer match the checksum written with them."""

    def __init__(self, path: Path, bad: list[tuple[str, int, str]]) -> None:
        self.bad = bad
        names = ", ".join(f"{phase}/{chunk} (array {name!r})" for phase, chunk, name in bad[:5])
        more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
        super().__init__(f"{path}: stored chunk {names}{more} fails its SHA-256 checksum (the file "
                         "was changed after it was written); rerun with --resume to recompute "
                         "the bad chunks, or --replace to start the folder afresh")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def array_to_bytes(array: np.ndarray) -> bytes:
    """``np.save`` bytes of an array (no pickle, dtype and shape kept exactly)."""
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(array), allow_pickle=False)
    return buffer.getvalue()


def array_from_bytes(data: bytes) -> np.ndarray:
    """An array stored by the chunk store, read back from its bytes."""
    return np.load(io.BytesIO(data), allow_pickle=False)


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
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
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
            worker: str | None = None) -> None:
        """Store one finished chunk and log its computation (one transaction)."""
        for name, array in arrays.items():
            if np.asarray(array).shape[:1] != (n_trials,):
                raise ValueError(f"array {name!r} of chunk {phase}/{chunk} has leading size "
                                 f"{np.asarray(array).shape[:1]}, expected ({n_trials},)")
        now = time.time()
        worker = worker or f"pid {os.getpid()}"
        with self._transaction():
            if self._has(phase, chunk):
                raise ValueError(f"chunk {phase}/{chunk} is already stored")
            self._conn.execute(
                "INSERT INTO chunks VALUES (?, ?, ?, ?, ?, ?, ?)",
                (self.audit_key, phase, chunk, first_trial, n_trials, seed, now),
            )
            blobs = [(name, array_to_bytes(array)) for name, array in sorted(arrays.items())]
            self._conn.executemany(
                "INSERT INTO arrays VALUES (?, ?, ?, ?, ?, ?)",
                [(self.audit_key, phase, chunk, name, data, _sha256(data)) for name, data in blobs],
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

    def get(self, phase: str, chunk: int) -> ChunkRecord:
        """The stored chunk (checksums verified first); KeyError when it is not stored."""
        row = self._conn.execute(
            "SELECT first_trial, n_trials, seed FROM chunks "
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
        # Checked before any byte is parsed: a changed blob is never used.
        bad = [(phase, chunk, name) for name, data, digest in rows if _sha256(data) != digest]
        if bad:
            raise CorruptChunkError(self.path, bad)
        arrays = {name: array_from_bytes(data) for name, data, _ in rows}
        return ChunkRecord(phase, chunk, int(row[0]), int(row[1]), int(row[2]), arrays)

    def records(self, phase: str) -> Iterator[ChunkRecord]:
        """Stored chunks of a phase in chunk order."""
        chunks = sorted(c for p, c in self.finished(phase))
        for chunk in chunks:
            yield self.get(phase, chunk)

    def verify(self) -> list[tuple[str, int, str]]:
        """(phase, chunk, array name) of every stored blob of this audit whose SHA-256 differs."""
        rows = self._conn.execute(
            "SELECT phase, chunk, name, data, sha256 FROM arrays WHERE audit_key = ? "
            "ORDER BY phase, chunk, name",
            (self.audit_key,),
        )
        return [(p, int(c), n) for p, c, n, data, digest in rows if _sha256(data) != digest]

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
