import unittest
from sig import arg_names


def keyword_only(a, *, b):
    pass


class HeldOut(unittest.TestCase):
    def test_keyword_only_function(self):
        self.assertEqual(arg_names(keyword_only), ["a"])
