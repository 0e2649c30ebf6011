"""Broadcasting model and optimizer state, and Python objects."""
import collections

import torch

import riseml as _common


def broadcast_parameters(params, root_rank=0):
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
        handles.append(broadcast_async_(p, root_rank, name="broadcast_parameters." + name))
    for h in handles:
        synchronize(h)


def broadcast_optimizer_state(optimizer, root_rank=0):
    """Makes every rank's optimizer state (momenta, step counts, hyperparameters) a copy of
    `root_rank`'s."""
    state = broadcast_object(optimizer.state_dict(), root_rank,
                             name="broadcast_optimizer_state")
    if _common.rank() != root_rank:
        optimizer.load_state_dict(state)


def broadcast_object(obj, root_rank=0, name=None):
    """`root_rank`'s object (pickled; tensors inside are moved to the CPU) on every rank."""
    return _common.broadcast_object(obj, root_rank, name)


def allgather_object(obj, name=None):
    """Every rank's object, as a list in rank order."""
    return _common.allgather_object(obj, name)
