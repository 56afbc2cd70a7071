"""One module per paper: the unlearning algorithms as batched trial pipelines."""
