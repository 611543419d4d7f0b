import unittest
from versions import latest


class VersionsTest(unittest.TestCase):
    def test_two_digit_minor(self):
        self.assertEqual(latest(["1.9.0", "1.10.0"]), "1.10.0")
