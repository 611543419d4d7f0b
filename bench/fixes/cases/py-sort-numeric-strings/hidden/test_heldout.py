import unittest
from versions import latest


class HeldOut(unittest.TestCase):
    def test_patch(self):
        self.assertEqual(latest(["2.0.10", "2.0.9", "1.99.99"]), "2.0.10")
