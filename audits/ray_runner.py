"""Chunks of trials as Ray tasks (``--backend ray``): the same chunks, computed by
:func:`audits.chunks.compute_chunk` on a cluster's workers, stored as each one returns.

A chunk is a pure function of (mechanism, seed, first trial, size), so where it runs does not
change its numbers: a report computed on Ray equals the local one.
"""

from __future__ import annotations

import os
from typing import Any

from audits.chunks import ChunkBar, ChunkPlan, Keep, compute_chunk, store_result

__all__ = ["run_on_ray"]


def _ray_chunk(mechanism, plan: ChunkPlan, keep: Keep | None = None):
    """Body of a Ray task (module-level so that workers import it by name)."""
    import socket

    arrays, seconds = compute_chunk(mechanism, plan, keep)
    return arrays, seconds, f"ray {socket.gethostname()} pid {os.getpid()}"


def run_on_ray(mechanism, plans: list[ChunkPlan], sink, progress: ChunkBar, *,
               address: str | None, keep: Keep | None = None) -> str:
    """Compute ``plans`` as Ray tasks (on the cluster at ``address``, or a local instance),
    each stored in ``sink`` as it returns; returns a description of the cluster. Ray failing
    to start is one RuntimeError line."""
    try:
        import ray
    except ImportError:
        raise ValueError("the Ray backend needs ray: pip install 'unlearn-verify[distributed]'") \
            from None
    started = False
    if not ray.is_initialized():
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False,
                     configure_logging=False)
        except Exception as error:  # Ray raises many types; the user needs one line
            first = str(error).strip().splitlines()[0] if str(error).strip() else ""
            raise RuntimeError(f"Ray could not start ({type(error).__name__}: {first[:200]}); "
                               "check --ray-address / RAY_ADDRESS or use --backend local") \
                from None
        started = True
    try:
        resources = ray.cluster_resources()
        wants_gpu = str(getattr(mechanism, "device", "cpu")).startswith("cuda")
        num_gpus = 1 if wants_gpu and resources.get("GPU", 0) >= 1 else 0
        if wants_gpu and not num_gpus:
            raise ValueError("the mechanism runs on CUDA but the Ray cluster has no GPU")
        task = ray.remote(num_cpus=1, num_gpus=num_gpus, max_retries=2)(_ray_chunk)
        shared = ray.put(mechanism)
        in_flight_limit = max(2, 2 * int(resources.get("CPU", 1)))
        queue = list(plans)
        pending: dict[Any, ChunkPlan] = {}
        while queue or pending:
            while queue and len(pending) < in_flight_limit:
                plan = queue.pop(0)
                pending[task.remote(shared, plan, keep)] = plan
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                plan = pending.pop(ref)
                arrays, seconds, worker = ray.get(ref)
                store_result(sink, plan, arrays, seconds, worker)
                progress.update(f"{plan.phase} {plan.chunk}")
        gpus = f", {int(resources.get('GPU', 0))} GPU" if resources.get("GPU") else ""
        return f"ray cluster ({int(resources.get('CPU', 0))} CPU{gpus})"
    finally:
        if started:
            ray.shutdown()


