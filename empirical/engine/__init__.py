"""The trial engine: batched trials, per-trial seeds and counter-based noise, memory hygiene.

Trial ``i`` of a run depends only on ``(seed, i)`` whatever the batch, chunk or device, so
chunks computed anywhere join into one experiment.
"""
