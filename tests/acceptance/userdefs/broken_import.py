"""User code that fails while importing."""

import json

SETTINGS = json.loads("{not json")
