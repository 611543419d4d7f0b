import unittest
from tags import add_tag


class TagsTest(unittest.TestCase):
    def test_calls_are_independent(self):
        self.assertEqual(add_tag("a"), ["a"])
        self.assertEqual(add_tag("b"), ["b"])
