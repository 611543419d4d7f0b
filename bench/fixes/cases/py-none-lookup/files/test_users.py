import unittest
from users import display_name


class UsersTest(unittest.TestCase):
    def test_missing_user(self):
        self.assertEqual(display_name(42), "unknown")
