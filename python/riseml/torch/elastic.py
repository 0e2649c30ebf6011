"""Horovod's `hvd.elastic` for PyTorch: TorchState, ElasticSampler, run.

    import riseml.torch as hvd

    state = hvd.elastic.TorchState(model, optimizer, epoch=0, batch=0)

    @hvd.elastic.run
    def train(state):
        for state.epoch in range(state.epoch, epochs):
            ...
            state.commit()

    train(state)

TorchState keeps models, optimizers and ElasticSamplers through handlers (their state_dict,
deep-copied at each commit) and any other keyword argument as a plain picklable attribute.
"""
import copy
import math
import random

import torch
import torch.utils.data

from riseml.elastic import ObjectState, run_fn
from riseml.torch.functions import (allgather_object, broadcast_object, broadcast_optimizer_state,
                                    broadcast_parameters)


def _rank():
    from riseml.torch import rank
    return rank()


def _size():
    from riseml.torch import size
    return size()


class ElasticSampler(torch.utils.data.Sampler):
    """Partitions a dataset among the ranks like DistributedSampler, and after a reset
    repartitions what this epoch has not processed yet among the new set of ranks.

    Call `record_batch` after each batch and `set_epoch` at the end of each epoch (not its
    start: a partial epoch must not be processed again), and keep the sampler in a TorchState.

    The partition counts every batch recorded as processed by all the ranks of the world it
    was recorded in (they train in step; Horovod's count), so a restore followed by a reset to
    another size deals exactly the samples the committed steps did not train: a dead rank's
    committed batches are in the committed weights and are not trained again.
    `processed_num` (Horovod's test reads it) counts the samples of this epoch processed by every
    rank up to the last sync, plus those this rank recorded since.

    Args:
        dataset: the dataset (of constant size).
        shuffle: shuffle the indices each epoch (the same order on every rank).
        seed: the shuffle's seed, the same on every rank.
    """

    def __init__(self, dataset, shuffle=True, seed=0):
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self._synced = 0  # samples of this epoch every rank processed, as of the last sync
        self._local = 0   # samples this rank recorded since
        self._world = 0   # samples every rank processed since, counted at each record
        self.num_replicas = 0
        self.rank = 0
        self.remaining_indices = []
        self.num_samples = 0
        self.total_size = 0
        self.reset()

    @property
    def processed_num(self):
        return self._synced + self._local

    def set_epoch(self, epoch):
        """Starts `epoch`: a new order (with shuffle), nothing processed yet."""
        self.epoch = epoch
        self._synced = self._local = self._world = 0
        self.reset()

    def record_batch(self, batch_idx, batch_size):
        """Records that this rank processed one more batch of `batch_size` samples."""
        self._local += batch_size
        self._world += batch_size * self.num_replicas

    def state_dict(self):
        return {"epoch": self.epoch, "processed_num": self.processed_num,
                "synced": self._synced, "local": self._local, "world": self._world}

    def load_state_dict(self, state_dict):
        self.epoch = state_dict["epoch"]
        if "synced" in state_dict:
            self._synced, self._local = state_dict["synced"], state_dict["local"]
            self._world = state_dict.get("world", self._local * self.num_replicas)
        else:  # a state_dict of Horovod's sampler: a count of every rank's samples
            self._synced, self._local, self._world = state_dict["processed_num"], 0, 0
        self.reset()

    def sync(self):
        """Takes rank 0's epoch and count (after a restore every survivor has the committed
        one) and repartitions what is left among the ranks there are now."""
        self.epoch, self._synced = broadcast_object((self.epoch, self._synced + self._world))
        self._local = self._world = 0
        self.reset()

    def reset(self):
        """Takes the current rank and size and repartitions the unprocessed samples."""
        self.num_replicas = _size()
        self.rank = _rank()
        order = list(range(len(self.dataset)))
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(order)
        processed = min(len(order), self._synced + self._world)
        self.remaining_indices = order[processed:]
        self.num_samples = int(math.ceil(len(self.remaining_indices) / self.num_replicas))
        self.total_size = self.num_samples * self.num_replicas

    def __iter__(self):
        indices = list(self.remaining_indices)
        # Padded with the first ones so that every rank gets the same number.
        indices += indices[:self.total_size - len(indices)]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples


class _Handler(object):
    """Keeps one object's committed state (a deep copy of its state_dict)."""

    def __init__(self, value):
        self.value = value
        self.save()

    def save(self):
        self._saved = copy.deepcopy(self.value.state_dict())

    def restore(self):
        self.value.load_state_dict(self._saved)

    def sync(self):
        raise NotImplementedError()

    def set_value(self, value):
        self.value = value
        self.save()


class _ModelHandler(_Handler):
    def sync(self):
        broadcast_parameters(self.value.state_dict(), root_rank=0)


class _OptimizerHandler(_Handler):
    def restore(self):
        # After a failed collective a DistributedOptimizer may still hold the handles of
        # gradient reductions that will never complete (the engine was shut down): drop them,
        # or the next zero_grad() refuses to run. The committed state has none in flight.
        if hasattr(self.value, "drop_pending_reductions"):
            self.value.drop_pending_reductions()
        super(_OptimizerHandler, self).restore()

    def sync(self):
        broadcast_optimizer_state(self.value, root_rank=0)


class _SamplerHandler(_Handler):
    def sync(self):
        self.value.sync()


_handler_registry = [
    (torch.nn.Module, _ModelHandler),
    (torch.optim.Optimizer, _OptimizerHandler),
    (ElasticSampler, _SamplerHandler),
]


def get_handler_registry():
    """The (type, handler class) pairs TorchState uses, first match wins."""
    return _handler_registry


def set_handler_registry(registry):
    global _handler_registry
    _handler_registry = registry


def _split_handled(kwargs):
    handlers, plain = {}, {}
    for name, value in kwargs.items():
        for kind, handler_class in _handler_registry:
            if isinstance(value, kind):
                handlers[name] = handler_class(value)
                break
        else:
            plain[name] = value
    return handlers, plain


class TorchState(ObjectState):
    """The state of a PyTorch training process: a model and an optimizer (optional), and any
    keyword argument (several models, samplers, epoch and batch counters ...). Objects with a
    handler are kept through their state_dict; the rest as picklable attributes."""

    def __init__(self, model=None, optimizer=None, **kwargs):
        kwargs.update(model=model, optimizer=optimizer)
        handlers, plain = _split_handled(kwargs)
        self._handlers = handlers
        for name, handler in handlers.items():
            setattr(self, name, handler.value)
        super(TorchState, self).__init__(bcast_object=broadcast_object, get_rank=_rank,
                                         allgather_object=allgather_object, **plain)

    def save(self):
        for handler in self._handlers.values():
            handler.save()
        super(TorchState, self).save()

    def restore(self):
        for handler in self._handlers.values():
            handler.restore()
        super(TorchState, self).restore()

    def sync(self):
        for handler in self._handlers.values():
            handler.sync()
        super(TorchState, self).sync()

    def __setattr__(self, name, value):
        # Assigning a new model/optimizer/sampler makes it the one committed.
        handlers = self.__dict__.get("_handlers")
        if handlers is not None and name in handlers and hasattr(self, name):
            handlers[name].set_value(value)
        super(TorchState, self).__setattr__(name, value)


def _reset(after_failure=False):
    # The survivors of a failure re-form the world without the rank it blamed.
    import riseml
    import riseml.torch
    riseml.shutdown()
    # shutdown() failed every pending operation: forget their outputs (they would pin tensors).
    riseml.torch._handles.clear()
    riseml._init_elastic(after_failure)


def run(func):
    """Runs `func(state, ...)` so that it goes on when workers leave or join: on a collective
    failure the last commit is restored, the world re-formed and the state synced from the new
    rank 0; on a host update the world is re-formed. Collectives must not run outside `func`
    (new workers would be in them while the others sync)."""
    return run_fn(func, _reset)


__all__ = ["TorchState", "ElasticSampler", "run", "get_handler_registry", "set_handler_registry"]
