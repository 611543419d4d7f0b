import unittest
from tags import add_tag


class HeldOut(unittest.TestCase):
    def test_given_list_is_extended(self):
        mine = ["x"]
        self.assertEqual(add_tag("y", mine), ["x", "y"])
        self.assertEqual(add_tag("z"), ["z"])
