"""A tiny runner for the python tests (run by ctest under riseml-launch): runs every test_*
function of the calling module in order, on every rank, and exits 1 if any failed."""
import sys
import traceback


def run(module_globals, init, rank):
    init()
    failures = 0
    for name, fn in list(module_globals.items()):
        if name.startswith("test_") and callable(fn):
            try:
                fn()
                print("rank %d: ok   %s" % (rank(), name), flush=True)
            except Exception:
                failures += 1
                print("rank %d: FAIL %s\n%s" % (rank(), name, traceback.format_exc()), flush=True)
    sys.exit(1 if failures else 0)


def raises(exc, fn, *args, match=None, **kwargs):
    """Asserts fn(*args) raises exc (with `match` in its message); returns the message."""
    try:
        fn(*args, **kwargs)
    except exc as e:
        if match is not None and match not in str(e):
            raise AssertionError("message %r lacks %r" % (str(e), match))
        return str(e)
    raise AssertionError("%s not raised" % exc.__name__)
