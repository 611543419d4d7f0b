import configparser
import unittest
from pathlib import Path


class HeldOut(unittest.TestCase):
    def test_host_still_there(self):
        config = configparser.ConfigParser()
        config.read(Path(__file__).with_name("settings.ini"))
        self.assertEqual(config["database"]["host"], "localhost")
