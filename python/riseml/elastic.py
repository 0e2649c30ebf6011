"""Horovod's elastic API, the framework-neutral half: State, ObjectState, run_fn.

A State keeps a committed copy of the training state in host memory. `commit()` saves it (and
checks for host updates), `restore()` goes back to it, `sync()` makes every rank take rank 0's.
`run_fn` wraps a training function: on a collective failure (HorovodInternalError) it restores
the last commit, re-forms the world (reset), syncs and calls the function again; on a host update
(HostsUpdatedInterrupt) it re-forms the world without restoring.

Host updates come from whoever watches the job (riseml's elastic driver, or a test) through
`notify_hosts_updated(timestamp, result)`; every registered State hears of it, and the ranks
agree on the newest update at the next commit, so all of them raise at the same step. Under
riseml-elastic a thread of each worker watches the worlds the driver announces and tells the
States of each new one as soon as it is there (Horovod's workers hear of host updates the same
way, from their driver).
"""
import atexit
import enum
import functools
import os
import queue
import sys
import threading

from riseml import HorovodInternalError, HostsUpdatedInterrupt


class HostUpdateResult(enum.IntFlag):
    """What a host update did (as Horovod's runner reports it)."""
    no_update = 0
    removed = 1
    added = 2
    mixed = removed | added


_listeners = []
_listeners_lock = threading.Lock()


_ANNOUNCED = {'start': HostUpdateResult.added, 'added': HostUpdateResult.added,
              'removed': HostUpdateResult.removed, 'mixed': HostUpdateResult.mixed,
              'failure': HostUpdateResult.removed}


def _world_announced():
    """(number, HostUpdateResult, why) of the world riseml-elastic announced and this process has
    not formed yet, else None."""
    try:
        import _riseml
    except ImportError:  # the State classes alone, without the binding (Horovod's unit tests)
        return None
    announced = _riseml.world_announced()
    if announced is None:
        return None
    number, why = announced
    return number, _ANNOUNCED.get(why, HostUpdateResult.mixed), why


class _Announcement(object):
    """A host message from the driver's announced world `number` (see _watch_announcements)."""

    def __init__(self, number, result):
        self.number = number
        self.result = result


_watcher = None


def _watch_announcements():
    """Under riseml-elastic, tells the registered States of every world the driver announces
    (hosts added or removed) within a tenth of a second, as Horovod's driver notifies its
    workers. Their next commit raises HostsUpdatedInterrupt on every rank."""
    global _watcher
    if _watcher is not None or not os.environ.get('RISEML_ELASTIC_STORE'):
        return

    stop = threading.Event()

    def watch():
        told = -1
        while not stop.wait(0.1):
            try:
                announced = _world_announced()
            except Exception:  # the driver is gone: the job is ending
                return
            if announced is None or announced[0] <= told:
                continue
            told = announced[0]
            # A failure's world is formed by the reset that follows the failure itself.
            if announced[2] != 'failure':
                with _listeners_lock:
                    listeners = list(_listeners)
                for state in listeners:
                    state.on_hosts_updated(told, _Announcement(told, announced[1]))

    _watcher = threading.Thread(target=watch, name='riseml-elastic-hosts', daemon=True)
    _watcher.start()

    def stop_watching():
        # Before the interpreter ends: a daemon thread that comes back from the binding (which
        # asks the driver without the GIL) during finalization is ended by pthread_exit, whose
        # unwinding through the binding's GIL guard aborts the process ("terminate called
        # without an active exception"), a worker that finished well then counts as failed.
        stop.set()
        _watcher.join(timeout=10)

    atexit.register(stop_watching)


def notify_hosts_updated(timestamp, result=HostUpdateResult.added):
    """Tells every State registered by a running `run_fn` that the hosts changed at `timestamp`
    (a number that grows with each update)."""
    with _listeners_lock:
        listeners = list(_listeners)
    for state in listeners:
        state.on_hosts_updated(timestamp, HostUpdateResult(result))


class State(object):
    """Training state kept across membership changes.

    Args:
        bcast_object: broadcasts a picklable object from rank 0 to every rank.
        get_rank: returns this worker's rank.
        allgather_object: gathers a picklable object from every rank (optional; with it, ranks
            agree on the newest host update any of them saw, not only rank 0's).
    """

    def __init__(self, bcast_object, get_rank, allgather_object=None):
        self._bcast_object = bcast_object
        self._rank = get_rank
        self._allgather_object = allgather_object
        self._host_messages = queue.Queue()
        self._last_updated_timestamp = 0
        self._reset_callbacks = []

    def register_reset_callbacks(self, callbacks):
        """Functions to call after every reset (a worker added or removed), e.g. to rescale the
        learning rate to the new number of workers."""
        self._reset_callbacks.extend(callbacks)

    def on_reset(self):
        self._host_messages = queue.Queue()
        self.reset()
        for callback in self._reset_callbacks:
            callback()

    def on_hosts_updated(self, timestamp, update_res):
        self._host_messages.put((timestamp, update_res))

    def commit(self):
        """Saves the state to host memory, then checks for host updates (raising
        HostsUpdatedInterrupt on every rank at once when there was one). Commits copy the whole
        state: commit every few batches, trading lost steps on a failure for time per batch."""
        self.save()
        self.check_host_updates()

    def check_host_updates(self):
        """Raises HostsUpdatedInterrupt, on every rank alike, when an update newer than the last
        one seen has arrived at any rank."""
        newest, update = self._last_updated_timestamp, HostUpdateResult.no_update
        # riseml-elastic announces every world it decides (hosts added or removed) in its store;
        # the watcher's messages only say that one came.
        announced = _world_announced()
        announced_update = HostUpdateResult.no_update if announced is None else announced[1]
        announced = announced is not None
        while not self._host_messages.empty():
            timestamp, result = self._host_messages.get()
            if isinstance(result, _Announcement):
                continue
            if timestamp > newest:
                newest = timestamp
            if timestamp > self._last_updated_timestamp:
                update |= result
        previous = self._last_updated_timestamp
        if self._allgather_object is not None:
            seen = self._allgather_object((newest, int(update), announced, int(announced_update)))
            newest = max(t for t, _, _, _ in seen)
            update = HostUpdateResult.no_update
            for t, u, a, au in seen:
                if t > previous:
                    update |= HostUpdateResult(u)
                if a:
                    update |= HostUpdateResult(au)
                    announced = True
        else:
            newest, update, announced, announced_update = self._bcast_object(
                (newest, int(update), announced, int(announced_update)))
            update = HostUpdateResult(update)
            if announced:
                update |= HostUpdateResult(announced_update)
        self._last_updated_timestamp = newest
        if newest > previous or announced:
            # Only removed hosts: the survivors' state is current, no sync needed after reset.
            raise HostsUpdatedInterrupt(update == HostUpdateResult.removed)

    def save(self):
        """Saves the state to host memory."""
        raise NotImplementedError()

    def restore(self):
        """Goes back to the last committed state."""
        raise NotImplementedError()

    def sync(self):
        """Makes every rank take rank 0's state."""
        raise NotImplementedError()

    def reset(self):
        """Called after a reset, before the sync."""


class ObjectState(State):
    """State of plain Python objects, given as keyword arguments and kept as attributes."""

    def __init__(self, bcast_object, get_rank, allgather_object=None, **kwargs):
        self._saved_state = dict(kwargs)
        self._set_attrs()
        super(ObjectState, self).__init__(bcast_object=bcast_object, get_rank=get_rank,
                                          allgather_object=allgather_object)

    def save(self):
        self._saved_state = {name: getattr(self, name) for name in self._saved_state}

    def restore(self):
        self._set_attrs()

    def sync(self):
        if self._saved_state:
            self._saved_state = self._bcast_object(self._saved_state)
            self._set_attrs()

    def _set_attrs(self):
        for name, value in self._saved_state.items():
            setattr(self, name, value)


def _left_out():
    try:
        import _riseml
    except ImportError:
        return False
    return _riseml.left_out()


def _reset_until_formed(reset, after_failure, attempts=3):
    """A new world may fail to form when a member it was announced with never comes (a spare
    that died on its way in); the launcher then announces the world without it: try again.
    A worker the launcher left out of the next world (its host was removed or blacklisted)
    leaves the job with exit status 0: it did nothing wrong."""
    for attempt in range(attempts):
        try:
            reset(after_failure or attempt > 0)
            return
        except HorovodInternalError as e:
            if _left_out():
                print(str(e), file=sys.stderr, flush=True)
                sys.stdout.flush()
                os._exit(0)
            if attempt == attempts - 1:
                raise


def run_fn(func, reset):
    """Wraps `func(state, ...)` so that it survives membership changes (see the module's
    docstring); `reset(after_failure)` re-forms the world (after_failure: a collective failed)."""

    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        with _listeners_lock:
            _listeners.append(state)
        _watch_announcements()
        skip_sync = False
        try:
            while True:
                try:
                    if not skip_sync:
                        state.sync()
                    return func(state, *args, **kwargs)
                except HorovodInternalError:
                    state.restore()
                    skip_sync = False
                    after_failure = True
                except HostsUpdatedInterrupt as e:
                    skip_sync = e.skip_sync
                    after_failure = False
                _reset_until_formed(reset, after_failure)
                state.on_reset()
        finally:
            with _listeners_lock:
                _listeners.remove(state)

    return wrapper
