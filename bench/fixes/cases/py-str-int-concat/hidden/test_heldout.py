import unittest
from report import summary


class HeldOut(unittest.TestCase):
    def test_zero(self):
        self.assertEqual(summary("box", 0), "box: 0 items")
