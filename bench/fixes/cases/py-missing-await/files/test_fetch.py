import asyncio
import unittest
from fetch import total


class FetchTest(unittest.TestCase):
    def test_total(self):
        self.assertEqual(asyncio.run(total(["apple", "pear"])), 7)
