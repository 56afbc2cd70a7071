"""Models trained in batches of trials: the linear models and the small networks, with the batched
products (gradients, Hessians, Hessian-vector products) the mechanisms need."""
