"""A crafted audit folder whose checksums are all recomputed (so every SHA-256 matches) cannot
make the store inflate a decompression bomb, allocate what an npy header declares, or read bytes
other than the header says: it is refused with one line before the bomb is allocated."""

from __future__ import annotations

import hashlib
import io
import json
import sqlite3
import sys
import tracemalloc
import zlib
from fractions import Fraction
from pathlib import Path

import numpy as np
import numpy.lib.format as npformat
import pytest

from audits import store as store_module
from audits.loader import spec_from_dict
from audits.options import ExecutionOptions
from audits.runner import comparable, run_audit
from audits.store import (
    STORE_NAME,
    ChunkStore,
    CorruptChunkError,
    StoreError,
    array_from_bytes,
    array_to_bytes,
    chunk_byte_limit,
)

_BOMB_BYTES = 200 * 2**20  # what the crafted blobs inflate to
_SMALL_PEAK = 16 * 2**20  # what a refusal may allocate at most (the bomb is 12.5 times this)


def _store(tmp_path: Path) -> ChunkStore:
    return ChunkStore(tmp_path / STORE_NAME, audit_key="k", spec_json="{}", code_version="v")


def _chunk(n: int = 20) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    return {"scores": rng.standard_normal(n), "trial_index": np.arange(n),
            "accuracy": np.full(n, 0.75)}


def _header(shape: tuple[int, ...], descr: str = "<f8") -> bytes:
    buffer = io.BytesIO()
    npformat.write_array_header_1_0(buffer, {"descr": descr, "fortran_order": False,
                                             "shape": shape})
    return buffer.getvalue()


def _deflated(header: bytes, zeros: int, tail: bytes = b"") -> bytes:
    """One zlib stream of ``header``, ``zeros`` zero bytes and ``tail``, never held inflated."""
    deflate = zlib.compressobj(9)
    parts, block = [deflate.compress(header)], bytes(2**20)
    for _ in range(zeros // len(block)):
        parts.append(deflate.compress(block))
    parts += [deflate.compress(bytes(zeros % len(block)) + tail), deflate.flush()]
    return b"".join(parts)


def _recompute_checksums(path: Path, *, phase: str, chunk: int) -> None:
    """Rewrite a chunk's SHA-256s as the store forms them (its binding: audit key, phase, chunk,
    trial range and seed as compact JSON and a NUL; a blob's: binding, name, NUL, bytes; the
    chunk's: binding and its list of arrays), as a forger would."""
    conn = sqlite3.connect(path)
    key, first, n, seed, names = conn.execute(
        "SELECT audit_key, first_trial, n_trials, seed, arrays FROM chunks WHERE phase = ? AND "
        "chunk = ?", (phase, chunk)).fetchone()
    binding = json.dumps([key, phase, chunk, first, n, seed], separators=(",", ":")).encode() + b"\0"
    conn.execute("UPDATE chunks SET sha256 = ? WHERE phase = ? AND chunk = ?",
                 (hashlib.sha256(binding + names.encode()).hexdigest(), phase, chunk))
    for name, data in conn.execute("SELECT name, data FROM arrays WHERE phase = ? AND chunk = ?",
                                   (phase, chunk)).fetchall():
        digest = hashlib.sha256(binding + name.encode() + b"\0" + data).hexdigest()
        conn.execute("UPDATE arrays SET sha256 = ? WHERE phase = ? AND chunk = ? AND name = ?",
                     (digest, phase, chunk, name))
    conn.commit()
    conn.close()


def _forge(path: Path, *, name: str, data: bytes, phase: str = "audit", chunk: int = 0,
           n_trials: int | None = None) -> None:
    """Replace one blob (and optionally the chunk's trial count), then recompute checksums."""
    conn = sqlite3.connect(path)
    conn.execute("UPDATE arrays SET data = ? WHERE phase = ? AND chunk = ? AND name = ?",
                 (data, phase, chunk, name))
    if n_trials is not None:
        conn.execute("UPDATE chunks SET n_trials = ? WHERE phase = ? AND chunk = ?",
                     (n_trials, phase, chunk))
    conn.commit()
    conn.close()
    _recompute_checksums(path, phase=phase, chunk=chunk)


def _refusal_and_peak(read) -> tuple[str, int]:
    """The CorruptChunkError ``read()`` raises and the most memory it allocated meanwhile."""
    tracemalloc.start()
    try:
        with pytest.raises(CorruptChunkError) as info:
            read()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(info.value)
    assert "\n" not in message and "--resume" in message
    return message, peak


@pytest.mark.parametrize("blob, why", [
    # a valid npy stream of 200 MiB of zeros: its header declares the bomb
    (lambda: _deflated(_header((_BOMB_BYTES // 8,)), _BOMB_BYTES), "more than the"),
    # a header of the chunk's 20 scores, followed by 200 MiB more zeros
    (lambda: _deflated(_header((20,)), _BOMB_BYTES), "inflates past the 288 bytes"),
    # 200 MiB of zeros with no npy header at all
    (lambda: _deflated(b"", _BOMB_BYTES), "neither npy bytes nor a zlib stream"),
])
def test_a_zlib_bomb_with_valid_checksums_is_refused_without_inflating_it(tmp_path, blob, why):
    data = blob()
    assert len(data) < _BOMB_BYTES // 500  # zlib's ratio near 1000:1 makes it a small blob
    with _store(tmp_path) as store:
        store.put(phase="audit", chunk=0, first_trial=0, n_trials=20, seed=1, arrays=_chunk())
    _forge(tmp_path / STORE_NAME, name="scores", data=data)
    with _store(tmp_path) as store:
        message, peak = _refusal_and_peak(lambda: store.get("audit", 0))
        assert "audit/0 (array 'scores': " in message and why in message
        assert "refused unread" in message and "SHA-256 checksum" not in message
        assert peak < _SMALL_PEAK
        # verify() inflates a piece at a time, never the whole blob, and names the same problem
        tracemalloc.start()
        try:
            bad = store.verify()
            assert tracemalloc.get_traced_memory()[1] < _SMALL_PEAK
        finally:
            tracemalloc.stop()
        assert len(bad) == 1 and bad[0][:2] == ("audit", 0) and why in bad[0][2]


def test_a_bomb_within_a_large_chunks_limit_is_refused_by_its_compression_ratio(tmp_path):
    # a chunk of 2,000 trials may hold 2.2 GB, so 200 MiB shaped as 2,000 rows passes that limit;
    # no blob the store writes inflates to more than 64 times its stored bytes
    n = 2000
    assert chunk_byte_limit(n) > _BOMB_BYTES
    with _store(tmp_path) as store:
        store.put(phase="audit", chunk=0, first_trial=0, n_trials=n, seed=1, arrays=_chunk(n))
    _forge(tmp_path / STORE_NAME, name="scores",
           data=_deflated(_header((n, _BOMB_BYTES // 8 // n)), _BOMB_BYTES))
    with _store(tmp_path) as store:
        message, peak = _refusal_and_peak(lambda: store.get("audit", 0, planned=(0, n, 1)))
    assert f"its header declares {n * (_BOMB_BYTES // 8 // n) * 8 + 128:,} bytes, more than 64 " \
        "times its" in message
    assert peak < _SMALL_PEAK


def test_arrays_that_compress_past_the_ratio_are_stored_plain_and_read_back(tmp_path):
    arrays = {"accuracy": np.ones(2000), "trial_index": np.arange(2000)}  # 250:1 and 5:1
    with _store(tmp_path) as store:
        store.put(phase="audit", chunk=0, first_trial=0, n_trials=2000, seed=1, arrays=arrays)
        back = store.get("audit", 0, planned=(0, 2000, 1)).arrays
    conn = sqlite3.connect(tmp_path / STORE_NAME)
    blobs = dict(conn.execute("SELECT name, data FROM arrays").fetchall())
    conn.close()
    assert blobs["accuracy"] == array_to_bytes(arrays["accuracy"])  # plain np.save bytes
    assert len(blobs["trial_index"]) < len(array_to_bytes(arrays["trial_index"])) / 2
    for name, array in arrays.items():
        assert back[name].dtype == array.dtype and back[name].tobytes() == array.tobytes()


@pytest.mark.parametrize("compress", [False, True])
def test_a_header_declaring_a_huge_shape_is_refused_before_allocation(tmp_path, compress):
    # 10^12 float64 (8 TB) declared, a few bytes given: np.load would try to allocate the shape
    raw = _header((10**12,)) + bytes(64)
    with _store(tmp_path) as store:
        store.put(phase="audit", chunk=0, first_trial=0, n_trials=20, seed=1, arrays=_chunk())
    _forge(tmp_path / STORE_NAME, name="scores", data=zlib.compress(raw) if compress else raw)
    with _store(tmp_path) as store:
        message, peak = _refusal_and_peak(lambda: store.get("audit", 0))
    assert "its header declares 8,000,000,000,128 bytes, more than the" in message
    assert peak < _SMALL_PEAK


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("extra, why", [(8, "inflates past the 288 bytes|it holds 296"),
                                        (-8, "ends after 280 of the 288 bytes|it holds 280")])
def test_a_blob_whose_length_disagrees_with_its_header_is_refused(tmp_path, compress, extra, why):
    scores = _chunk()["scores"]
    raw = array_to_bytes(scores)
    raw = raw + bytes(extra) if extra > 0 else raw[:extra]  # np.load ignores trailing bytes
    with _store(tmp_path) as store:
        store.put(phase="audit", chunk=0, first_trial=0, n_trials=20, seed=1, arrays=_chunk())
    _forge(tmp_path / STORE_NAME, name="scores", data=zlib.compress(raw) if compress else raw)
    with _store(tmp_path) as store, pytest.raises(CorruptChunkError, match=why):
        store.get("audit", 0)


def test_an_object_dtype_header_is_refused(tmp_path):
    raw = _header((20,), descr="|O") + bytes(160)
    with _store(tmp_path) as store:
        store.put(phase="audit", chunk=0, first_trial=0, n_trials=20, seed=1, arrays=_chunk())
    _forge(tmp_path / STORE_NAME, name="accuracy", data=zlib.compress(raw))
    with _store(tmp_path) as store, pytest.raises(CorruptChunkError,
                                                  match="dtype object holds Python objects"):
        store.get("audit", 0)
    with pytest.raises(ValueError, match="holds Python objects"):
        array_from_bytes(raw)


def test_a_chunk_declaring_more_trials_than_planned_cannot_raise_its_limit(tmp_path):
    # 1,000 trials would allow 1 GiB; the plan says 20, which the bomb exceeds
    with _store(tmp_path) as store:
        store.put(phase="audit", chunk=0, first_trial=0, n_trials=20, seed=1, arrays=_chunk())
    assert chunk_byte_limit(1000) > _BOMB_BYTES + 1024 > chunk_byte_limit(20)
    _forge(tmp_path / STORE_NAME, name="scores", n_trials=1000,
           data=_deflated(_header((_BOMB_BYTES // 8,)), _BOMB_BYTES))
    with _store(tmp_path) as store:
        message, peak = _refusal_and_peak(
            lambda: store.get("audit", 0, planned=(0, 20, 1)))
        assert "chunk record: trials 0..999 with seed 1, where the audit plans trials 0..19" \
            in message
        assert peak < _SMALL_PEAK
        assert store.verify({("audit", 0): (0, 20, 1)})[0][2].startswith("chunk record: ")


def test_put_refuses_a_chunk_over_the_limit_a_read_would_refuse(tmp_path, monkeypatch):
    monkeypatch.setattr(store_module, "_CHUNK_BYTES", 0)
    rows = np.zeros((3, 2**18))  # 2 MiB per trial, over the 1 MiB per trial
    with _store(tmp_path) as store:
        with pytest.raises(StoreError, match=r"chunk audit/0 holds 6,291,584 bytes, more than "
                                             r"the 3,145,728 .* for 3 trials"):
            store.put(phase="audit", chunk=0, first_trial=0, n_trials=3, seed=1,
                      arrays={"params": rows})
        assert store.finished() == set()


def test_the_largest_chunk_a_builtin_adapter_writes_fits_well_under_the_limit(tmp_path):
    from audits.adapters.koloskova_mechanism import PARAMS_STATISTICS_LIMIT

    # the longest exact column sum: 10^7 values (the spec's trial limit) of the largest float64,
    # in units of 2^-1074, as hex text with a sign
    longest = "-" + format(10**7 * int(Fraction(sys.float_info.max) * 2**1074), "x")
    assert len(longest) <= store_module._SUM_BYTES
    n, d = 20, PARAMS_STATISTICS_LIMIT
    rng = np.random.default_rng(2)
    arrays = {f"{side}.statistics.params": rng.standard_normal((n, d))
              for side in ("unlearned", "retrained")}
    arrays |= {f"{side}.scores.{name}": rng.standard_normal(n)
               for side in ("unlearned", "retrained") for name in ("loss", "stated-direction")}
    arrays |= {f"{side}.accuracy": rng.random(n) for side in ("unlearned", "retrained")}
    arrays["trial_index"] = np.arange(n)
    sums = {f"{side}.column_sums.params": np.array([longest] * d, dtype="S")
            for side in ("unlearned", "retrained")}
    size = sum(len(array_to_bytes(a)) for a in (*arrays.values(), *sums.values()))
    assert size * 10 < chunk_byte_limit(n)
    assert len(array_to_bytes(arrays["unlearned.statistics.params"])) * 2 * 10 \
        < chunk_byte_limit(n) - chunk_byte_limit(0)  # the rows alone: ten times under
    with _store(tmp_path) as store:
        store.put(phase="pilot", chunk=0, first_trial=0, n_trials=n, seed=1,
                  arrays={**arrays, **sums}, per_chunk=sums)
        back = store.get("pilot", 0, planned=(0, n, 1)).arrays
    assert set(back) == set(arrays) | set(sums)
    for name, array in {**arrays, **sums}.items():
        assert back[name].dtype == array.dtype and back[name].tobytes() == array.tobytes()


def test_every_kind_of_array_round_trips_bit_exactly_compressed_or_not(tmp_path):
    rng = np.random.default_rng(3)
    arrays = {"noise": rng.standard_normal((6, 3)),  # stored plain: does not compress
              "zeros": np.zeros((6, 50)),  # stored compressed
              "fortran": np.asfortranarray(rng.standard_normal((6, 4))),
              "float32": rng.standard_normal(6).astype(np.float32),
              "bool": np.arange(6) % 2 == 0, "index": np.arange(6),
              "empty": np.zeros((6, 0)), "sums": np.array([b"-1f", b"a" * 531], dtype="S")}
    with _store(tmp_path) as store:
        store.put(phase="audit", chunk=0, first_trial=0, n_trials=6, seed=1, arrays=arrays,
                  per_chunk=["sums"])
        back = store.get("audit", 0, planned=(0, 6, 1)).arrays
        assert store.verify({("audit", 0): (0, 6, 1)}) == []
    for name, array in arrays.items():
        assert back[name].dtype == array.dtype and back[name].shape == array.shape
        assert back[name].tobytes(order="A") == array.tobytes(order="A")
        assert back[name].flags.f_contiguous == array.flags.f_contiguous


# -- through the audit and the CLI --------------------------------------------------------------


def _spec_text() -> str:
    return 'trials = 40\npilot_trials = 0\nchunk_size = 20\nattacks = ["loss"]\n'


def _bomb_the_first_audit_chunk(folder: Path) -> None:
    _forge(folder / STORE_NAME, name="unlearned.scores.loss",
           data=_deflated(_header((_BOMB_BYTES // 8,)), _BOMB_BYTES))


def test_an_audit_refuses_a_bombed_folder_and_resume_recomputes_the_chunk(tmp_path):
    spec = spec_from_dict({"trials": 40, "pilot_trials": 0, "chunk_size": 20,
                           "attacks": ["loss"], "estimators": ["auc"], "name": "bomb"})
    first = run_audit(spec, out_dir=tmp_path)
    _bomb_the_first_audit_chunk(tmp_path)
    with pytest.raises(CorruptChunkError, match=r"audit/0 \(array 'unlearned\.scores\.loss': "
                                                r"its header declares 209,715,328 bytes"):
        run_audit(spec, out_dir=tmp_path)
    repaired = run_audit(spec, out_dir=tmp_path, options=ExecutionOptions(resume=True))
    assert repaired.report["timing"]["chunks_resumed"] == 1
    assert comparable({**repaired.report, "notes": None}) == comparable(
        {**first.report, "notes": None})


@pytest.mark.parametrize("as_json", [False, True])
def test_the_cli_refuses_a_bombed_folder_with_one_error_line(tmp_path, capsys, as_json):
    from audits.cli import main

    spec_path = tmp_path / "s.toml"
    spec_path.write_text(_spec_text())
    out = tmp_path / "out"
    assert main(["audit", "run", str(spec_path), "--out", str(out), "--quiet"]) == 0
    _bomb_the_first_audit_chunk(out)
    capsys.readouterr()
    flags = ["--json"] if as_json else []
    assert main(["audit", "run", str(spec_path), "--out", str(out), "--quiet", *flags]) == 1
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and captured.err.startswith("error: ")
    assert "audit/0 (array 'unlearned.scores.loss': its header declares" in captured.err
    assert "Traceback" not in captured.err + captured.out
    if as_json:
        error = json.loads(captured.out)["error"]
        assert error["type"] == "store" and "refused unread" in error["message"]
