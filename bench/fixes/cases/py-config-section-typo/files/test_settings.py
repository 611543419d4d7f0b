import unittest
from settings import database_port


class SettingsTest(unittest.TestCase):
    def test_port(self):
        self.assertEqual(database_port(), 5432)
