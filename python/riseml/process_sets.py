"""Process sets (Horovod's API): collectives among a subset of the ranks.

    even = hvd.add_process_set([0, 2])      # every rank calls it, with the same ranks
    hvd.allreduce(x, process_set=even)      # only ranks 0 and 2 call this
    hvd.remove_process_set(even)            # every rank again

Each set is a communicator of its own, set up through the job's rendezvous (no new bootstrap),
with an engine of its own, so disjoint sets negotiate and progress independently. Sets given
to ``init(process_sets=[...])`` are added right after init.
"""
import _riseml


class ProcessSet:
    """A set of ranks. Pass it to add_process_set() or init(process_sets=...), then as
    ``process_set=`` to any collective. ``process_set_id`` is None until added."""

    process_set_id = None
    ranks = None
    _every_rank = False  # added with no ranks: every rank, on the job's engine

    def __init__(self, ranks):
        try:
            ranks = sorted(ranks)
        except TypeError:
            raise ValueError("riseml: ProcessSet takes a list of ranks (mpi4py communicators "
                             "are not supported)") from None
        if any(not isinstance(r, int) or isinstance(r, bool) for r in ranks):
            raise ValueError("riseml: ProcessSet ranks must be integers, got %r" % (ranks,))
        self.ranks = ranks

    def _check(self):
        if self.process_set_id is None:
            raise ValueError("riseml: %s has not been added (add_process_set) or was removed"
                             % self)

    def size(self):
        """The number of ranks in the set."""
        self._check()
        if self.process_set_id == 0:
            return _riseml.size()
        return len(self.ranks)

    def rank(self):
        """This process's rank within the set; -1 if it is not in the set."""
        self._check()
        me = _riseml.rank()
        if self.process_set_id == 0:
            return me
        return self.ranks.index(me) if me in self.ranks else -1

    def included(self):
        """Whether this process belongs to the set."""
        self._check()
        return self.process_set_id == 0 or _riseml.rank() in self.ranks

    def invalidate(self):
        self.process_set_id = None
        self.ranks = None
        self._every_rank = False

    def __eq__(self, other):
        return (isinstance(other, ProcessSet) and self.process_set_id == other.process_set_id
                and self.ranks == other.ranks)

    def __hash__(self):
        return hash((self.process_set_id, tuple(self.ranks or ())))

    def __str__(self):
        return "ProcessSet(process_set_id=%s, ranks=%s)" % (self.process_set_id, self.ranks)

    __repr__ = __str__


global_process_set = ProcessSet([])
global_process_set.process_set_id = 0

# id -> the ProcessSet objects registered for it (all invalidated on removal)
_registered = {0: [global_process_set]}
# the sets added without ranks (each an alias of every rank), invalidated at shutdown
_every_rank_sets = []


def _id(process_set):
    """The engine id of `process_set` (None: the whole job)."""
    if process_set is None:
        return 0
    if not isinstance(process_set, ProcessSet):
        raise ValueError("riseml: process_set must be a ProcessSet, got %r" % (process_set,))
    process_set._check()
    return process_set.process_set_id


def _refresh_global():
    if _riseml.is_initialized():
        global_process_set.ranks = list(range(_riseml.size()))


def add_process_set(process_set):
    """Registers a process set (a ProcessSet or a list of ranks) on every rank: a collective
    call of all ranks of the job, with the same ranks everywhere. An empty list means every
    rank (as in Horovod). Returns the ProcessSet."""
    if not isinstance(process_set, ProcessSet):
        process_set = ProcessSet(process_set)
    if process_set.process_set_id is not None:
        raise ValueError("riseml: %s was already added" % process_set)
    if not process_set.ranks:
        # Horovod's rule: a set added without ranks spans every rank of the job (and may be
        # added again; Horovod's tests add the odd ranks' set, empty at size 1). It runs on the
        # job's own engine, as the global set does.
        if not _riseml.is_initialized():
            raise ValueError("riseml: add_process_set before init()")
        process_set.ranks = list(range(_riseml.size()))
        process_set.process_set_id = 0
        process_set._every_rank = True
        _every_rank_sets.append(process_set)
        return process_set
    process_set.process_set_id = _riseml.add_process_set(process_set.ranks)
    _registered.setdefault(process_set.process_set_id, []).append(process_set)
    return process_set


def remove_process_set(process_set):
    """Unregisters a process set on every rank (all ranks call it). Returns False for the
    global set or one that is not registered."""
    if process_set._every_rank and process_set.process_set_id == 0:  # added without ranks
        _every_rank_sets[:] = [ps for ps in _every_rank_sets if ps is not process_set]
        process_set.invalidate()
        return True
    if process_set.process_set_id in (None, 0):
        return False
    removed = _riseml.remove_process_set(process_set.process_set_id)
    for ps in _registered.pop(process_set.process_set_id, [process_set]):
        ps.invalidate()
    return removed


def _reset():
    """After shutdown(): every added set is gone."""
    while _every_rank_sets:
        _every_rank_sets.pop().invalidate()
    for set_id in [i for i in _registered if i != 0]:
        for ps in _registered.pop(set_id):
            ps.invalidate()


def _setup(process_sets):
    """init(process_sets=...): a list of ProcessSet (or rank lists) to add, or "dynamic"."""
    _refresh_global()
    if process_sets is None or process_sets == "dynamic":
        return
    for ps in process_sets:
        if isinstance(ps, ProcessSet) and ps.process_set_id == 0:
            continue
        add_process_set(ps)
