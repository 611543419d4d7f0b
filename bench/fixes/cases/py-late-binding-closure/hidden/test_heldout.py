import unittest
from handlers import make_multipliers


class HeldOut(unittest.TestCase):
    def test_one(self):
        self.assertEqual([f(7) for f in make_multipliers(1)], [0])

    def test_five(self):
        self.assertEqual(make_multipliers(5)[3](2), 6)
