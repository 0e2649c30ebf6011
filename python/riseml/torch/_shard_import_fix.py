"""Lets Debian's torch 1.13 import torch.distributed._shard (which FSDP and DDP's
ReplicatedTensor mode need) on Python 3.11.

torch 1.13's sharded_tensor/metadata.py gives a dataclass field a default instance of another
dataclass; Python 3.11 refuses such "mutable defaults" with a ValueError, so `from
torch.distributed.fsdp import FullyShardedDataParallel` fails for every backend. While that module
is imported for the first time, a refused default becomes a default_factory that returns a copy
of it (torch 2.0's own fix). Nothing else is touched; on other Pythons or torches this does
nothing.
"""
import copy
import dataclasses
import sys


def apply():
    if sys.version_info < (3, 11) or "torch.distributed._shard" in sys.modules:
        return
    original = getattr(dataclasses, "_get_field", None)
    if original is None:
        return

    def get_field(cls, a_name, a_type, *args):
        try:
            return original(cls, a_name, a_type, *args)
        except ValueError as e:
            declared = cls.__dict__.get(a_name)
            if "mutable default" not in str(e) or not isinstance(declared, dataclasses.Field):
                raise
            default = declared.default
            declared.default = dataclasses.MISSING
            declared.default_factory = lambda: copy.deepcopy(default)
            return original(cls, a_name, a_type, *args)

    dataclasses._get_field = get_field
    try:
        import torch.distributed._shard  # noqa: F401
    except Exception:  # a torch without it, or another failure: leave it to the user's import
        pass
    finally:
        dataclasses._get_field = original
