import unittest
from sig import arg_names


def sample(a, b, c=1):
    pass


class SigTest(unittest.TestCase):
    def test_names(self):
        self.assertEqual(arg_names(sample), ["a", "b", "c"])
