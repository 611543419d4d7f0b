import unittest

from client import attempts


class ClientTest(unittest.TestCase):
    def test_attempts(self):
        self.assertEqual(attempts(), 4)


if __name__ == "__main__":
    unittest.main()
