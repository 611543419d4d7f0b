import unittest
from users import display_name


class HeldOut(unittest.TestCase):
    def test_known(self):
        self.assertEqual(display_name(2), "grace")

    def test_another_missing(self):
        self.assertEqual(display_name(-1), "unknown")
