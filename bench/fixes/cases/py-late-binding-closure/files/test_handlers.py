import unittest
from handlers import make_multipliers


class HandlersTest(unittest.TestCase):
    def test_each_keeps_its_factor(self):
        self.assertEqual([f(10) for f in make_multipliers(3)], [0, 10, 20])
