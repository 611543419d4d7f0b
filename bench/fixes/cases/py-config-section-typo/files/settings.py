import configparser
from pathlib import Path


def database_port():
    config = configparser.ConfigParser()
    config.read(Path(__file__).with_name("settings.ini"))
    return config["database"].getint("port")
