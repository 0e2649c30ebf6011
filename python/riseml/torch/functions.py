"""Broadcasting model and optimizer state, and Python objects."""
import collections

import torch

import riseml as _common


def broadcast_parameters(params, root_rank=0, process_set=_common.global_process_set):
    """Copies `root_rank`'s parameters into every rank's, in place.

    `params`: a state_dict, or an iterable of (name, tensor) such as model.named_parameters().
    """
    if isinstance(params, dict):
        items = sorted(params.items())
    elif isinstance(params, collections.abc.Iterable):
        items = list(params)
    else:
        raise ValueError("riseml: broadcast_parameters takes a dict or (name, tensor) pairs")
    from riseml.torch import broadcast_async_, synchronize
    handles = []
    for name, p in items:
        if p is None or not torch.is_tensor(p):
            continue
        handles.append(broadcast_async_(p, root_rank, name="broadcast_parameters." + name,
                                        process_set=process_set))
    for h in handles:
        synchronize(h)


def broadcast_optimizer_state(optimizer, root_rank=0, model=None,
                              process_set=_common.global_process_set):
    """Makes every rank's optimizer state (momenta, step counts, hyperparameters) a copy of
    `root_rank`'s."""
    del model  # Horovod's argument for Keras-style optimizers; not needed here
    state = broadcast_object(optimizer.state_dict(), root_rank,
                             name="broadcast_optimizer_state", process_set=process_set)
    if _common.rank() != root_rank:
        optimizer.load_state_dict(state)


def broadcast_object(obj, root_rank=0, name=None, process_set=_common.global_process_set):
    """`root_rank`'s object (pickled; tensors inside are moved to the CPU) on every rank of
    `process_set`."""
    return _common.broadcast_object(obj, root_rank, name, process_set)


def allgather_object(obj, name=None, process_set=_common.global_process_set):
    """Every rank's object (of `process_set`), as a list in rank order."""
    return _common.allgather_object(obj, name, process_set)
