"""A stand-in for the expecttest package, which Debian does not ship and torch's common_utils
imports for its TestCase base. distributed_test.py uses none of its inline-expectation
features; the ones common_utils touches are here."""
import unittest

ACCEPT = False


class TestCase(unittest.TestCase):
    longMessage = True

    def assertExpectedInline(self, actual, expect, skip=0):
        self.assertEqual(str(actual).strip(), str(expect).strip())

    def assertExpectedRaisesInline(self, exc_type, callable, expect, *args, **kwargs):
        with self.assertRaises(exc_type) as ctx:
            callable(*args, **kwargs)
        self.assertExpectedInline(str(ctx.exception), expect)
