import json
from pathlib import Path


def retries():
    return json.loads((Path(__file__).parent / "settings.json").read_text())["retries"]


def attempts():
    return retries() + 1
