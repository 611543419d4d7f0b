import unittest
from names import stem


class HeldOut(unittest.TestCase):
    def test_other_name(self):
        self.assertEqual(stem("test.txt"), "test")

    def test_no_suffix(self):
        self.assertEqual(stem("text"), "text")
